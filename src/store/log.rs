//! The NDJSON activity log `oneshot-log.json`: append-only writer and tolerant reader.
//!
//! One JSON document per line. The engine appends state changes and the pipeline appends one
//! activity record per output line. A kill -9 can leave a torn last line; the writer starts
//! the next record on a fresh line and the reader skips the torn one with a warning.

mod handoff;
mod reader;
#[cfg(test)]
mod tests;
mod typed;
mod writer;

// The records are the session's words, defined beside the decision core that emits them
// (`crate::session::record`); the log writes and reads them, and names them here too.
pub use crate::session::record;

pub use reader::{LogChunk, LogError, LogRead, read_from, read_log};
pub use record::{
    Activity, Blob, DecisionInput, DecisionRecord, DecisionResult, EvidenceRecord, Hook,
    InterruptRecord, Message, PolicyLog, PolicyReload, PolicyReloadFailed, PolicyUntrusted,
    ProcessEvent, ProcessRecord, Record, SessionEvent, SessionRecord, StateChange,
};
pub use typed::{Decoder, Log};
pub use writer::LogWriter;

/// The log's file name inside a session directory.
pub const LOG_FILE: &str = "oneshot-log.json";
