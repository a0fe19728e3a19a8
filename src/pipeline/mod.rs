//! The output pipeline: timestamp → redact → NDJSON log → parse, one pass, bounded memory.

mod stream;

pub use stream::Stream;
