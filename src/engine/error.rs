//! Errors that stop the engine. A session's own failures (a crashed auditor, a policy veto)
//! are not errors: they are outcomes, recorded in the state file. Problems a session survives
//! (a reload that did not validate, a snapshot that could not be taken, a hook that failed
//! open) are not errors either: they are [`Update::Warning`](super::Update::Warning)s and
//! `warning` records. What is left here stops the session from being driven; the session
//! itself stays on disk, resumable.
//!
//! Messages read after "failed to …" and leave their cause to the error chain
//! ([`crate::error`]); which exit code each error means is the CLI's business (`src/cli/exit.rs`).

use crate::store::StoreError;

/// Why the engine could not start or go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The session's files could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The policy could not be loaded.
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    /// The policy watcher could not be set up.
    #[error(transparent)]
    Reload(#[from] crate::policy::ReloadError),
    /// A command line is unusable.
    #[error(transparent)]
    Exec(#[from] crate::executor::ExecError),
    /// The session is missing something it needs (the message reads after "failed to").
    #[error("{0}")]
    Usage(String),
    /// The redaction patterns do not compile.
    #[error("use the policy's redaction patterns")]
    Redact(#[source] crate::pipeline::RedactError),
    /// The session cannot be resumed in its state.
    #[error("resume session {id}: it is {state}; {why}")]
    Refused {
        /// The session id.
        id: String,
        /// Its state.
        state: crate::machine::SessionState,
        /// Why, and what to do instead.
        why: String,
    },
    /// The activity log could not be written.
    #[error(
        "write the activity log of session {id} (the session is resumable once the disk is fixed)"
    )]
    Log {
        /// The session id.
        id: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The async runtime could not be started.
    #[error("start the async runtime: {0}")]
    Runtime(String),
    /// oneshot itself got something wrong: a bug, reported rather than ignored.
    #[error(
        "drive session {id}: internal error: {message} (the session is resumable; please report this)"
    )]
    Internal {
        /// The session id.
        id: String,
        /// What went wrong.
        message: String,
    },
}
