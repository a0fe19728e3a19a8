//! A log replay cannot read.

/// A record that breaks `docs/log-format.md` badly enough that replaying it would be a guess.
/// Unknown record types and unknown fields are not errors; they are skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A record of a kind replay depends on did not decode.
    #[error("read log record {record}: it is a malformed `{kind}` record: {message}")]
    Malformed {
        /// Position among the log's records, from 1.
        record: usize,
        /// Its `type`.
        kind: String,
        /// What is wrong.
        message: String,
    },
}
