//! Errors that stop the engine before or outside a session's own outcome.

use crate::store::StoreError;

/// Why the engine could not start or go on. A session's own failures (a crashed auditor, a
/// policy veto) are not errors: they are outcomes, recorded in the state file.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Reading or writing the session's files failed.
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
    /// The redaction patterns do not compile.
    #[error("invalid redaction pattern: {0}")]
    Redact(String),
    /// The session cannot be resumed in its state.
    #[error("session {id} is {state}: {why}")]
    Refused {
        /// The session id.
        id: String,
        /// Its state.
        state: crate::machine::SessionState,
        /// Why, and what to do instead.
        why: String,
    },
    /// Writing the activity log failed.
    #[error("cannot write the activity log of session {id}")]
    Log {
        /// The session id.
        id: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An event reached a state whose table has no row for it: a bug in the engine, reported
    /// rather than ignored.
    #[error("internal error in session {id}: {source}")]
    Illegal {
        /// The session id.
        id: String,
        /// The refused transition.
        #[source]
        source: crate::machine::Illegal,
    },
}

impl EngineError {
    /// The CLI exit code for this error: 4 for refusals (resume not allowed, session locked),
    /// 2 for usage and configuration errors, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            EngineError::Refused { .. } | EngineError::Store(StoreError::Locked { .. }) => 4,
            EngineError::Policy(_)
            | EngineError::Exec(_)
            | EngineError::Redact(_)
            | EngineError::Store(StoreError::NotFound { .. } | StoreError::Ambiguous { .. }) => 2,
            _ => 1,
        }
    }
}
