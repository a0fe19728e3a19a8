//! Where the log stage writes: a destination for one encoded record at a time.

use std::io;

/// The log stage's destination: each call appends one JSON document, written by `encode`,
/// as one line. The session's log (the store's `LogWriter`) is the one the engine passes in;
/// the pipeline itself names no file and knows nothing of the store, so it sits below it.
pub trait RecordSink {
    /// Appends the one JSON document (without a newline) that `encode` writes into the
    /// sink's buffer — the hot path: no intermediate copy, no `serde_json::Value`.
    fn append_encoded(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> io::Result<()>;
}
