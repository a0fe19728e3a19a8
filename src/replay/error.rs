//! A log replay cannot read.

/// A record that breaks `docs/log-format.md` badly enough that replaying it would be a guess.
/// Unknown record types and unknown fields are not errors; they are skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// A `decision` record lacks a field, names an unknown hook or state, or has an `input` or
    /// `result` that does not decode for its hook.
    #[error("log record {record}: malformed {hook} decision: {message}")]
    Decision {
        /// Position among the log's records, from 1.
        record: usize,
        /// The hook as written (`?` when absent).
        hook: String,
        /// What is wrong.
        message: String,
    },
    /// A `state_change` record lacks `from`, `to` or names an unknown state.
    #[error("log record {record}: malformed state_change: {message}")]
    Transition {
        /// Position among the log's records, from 1.
        record: usize,
        /// What is wrong.
        message: String,
    },
    /// A `blob` record lacks its `sha256` or `text`.
    #[error("log record {record}: malformed blob: {message}")]
    Blob {
        /// Position among the log's records, from 1.
        record: usize,
        /// What is wrong.
        message: String,
    },
}
