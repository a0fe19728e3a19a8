//! What can go wrong with the job store, each said with what happened, where, and what to do.

use crate::job::JobState;
use std::path::PathBuf;

/// A job store operation that did not happen. Whatever the variant, nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JobStoreError {
    /// No job has this id or id prefix.
    #[error("no job {id:?} in the job store; `oneshot job list` shows the jobs there are")]
    NotFound {
        /// The id or prefix asked for.
        id: String,
    },

    /// The prefix names more than one job.
    #[error(
        "{id:?} names {n} jobs ({names}); give more of the id to pick one",
        n = matches.len(),
        names = matches.join(", ")
    )]
    Ambiguous {
        /// The prefix asked for.
        id: String,
        /// The ids it matches (the first few).
        matches: Vec<String>,
    },

    /// A job with this id exists already.
    #[error(
        "job {id} exists already in the job store; nothing was written; create it under a new id"
    )]
    Exists {
        /// The id.
        id: String,
    },

    /// A token with this name exists already (revoked or not: a name is never reused, so
    /// the audit trail's actor names one token).
    #[error(
        "a token named {name:?} exists already in the job store; nothing was written; choose \
         another name (`oneshot token list` shows them)"
    )]
    TokenExists {
        /// The name.
        name: String,
    },

    /// No token that is not revoked has this name.
    #[error(
        "no token named {name:?} that is not revoked in the job store; `oneshot token list` \
         shows them, `oneshot token create` makes one"
    )]
    NoToken {
        /// The name asked for.
        name: String,
    },

    /// The runner's lease is no longer current.
    #[error(
        "job {id}: this runner lost its lease (fencing token {fence} is stale): another runner \
         reclaimed the job after the lease expired, or a human canceled it; nothing was written; \
         stop working on this job (`oneshot job show {id}` says where it is now)"
    )]
    Fenced {
        /// The job.
        id: String,
        /// The stale fencing token.
        fence: u64,
    },

    /// A human's verb was judged against a state the job has left.
    #[error(
        "job {id} moved to {now} meanwhile (the verb was meant for {expected}); nothing was \
         written; run the verb again if it still applies"
    )]
    Conflict {
        /// The job.
        id: String,
        /// The state the verb was judged against.
        expected: JobState,
        /// The state the job is in.
        now: JobState,
    },

    /// A human's verb was judged against a step the job has left: a runner stepped it again
    /// meanwhile (it may have made a new result), though it rests in the same state.
    #[error(
        "job {id} was stepped again meanwhile (it is at step {now}; the verb was meant for step \
         {seen}); nothing was written; look at it again (`oneshot job show {id}`) and give the \
         verb again if it still applies"
    )]
    Stepped {
        /// The job.
        id: String,
        /// The step the verb was judged at.
        seen: u32,
        /// The job's step now.
        now: u32,
    },

    /// A runner holds a live lease on the job.
    #[error(
        "job {id}: runner {runner} is stepping it right now; nothing was written; wait for the \
         step to end, or cancel the job (`oneshot job cancel {id}`)"
    )]
    Busy {
        /// The job.
        id: String,
        /// The runner holding it.
        runner: String,
    },

    /// A stored row does not parse.
    #[error("job {id}: its stored record does not parse: {message}")]
    Corrupt {
        /// The job.
        id: String,
        /// What does not parse, where, and what to do.
        message: String,
    },

    /// The database itself failed: cannot be opened, locked, not a job store, …
    #[error("job store {path}: {message}", path = path.display())]
    Db {
        /// The store's file.
        path: PathBuf,
        /// What happened and what to do.
        message: String,
        /// The database's (or the OS's) own error, when there was one: the cause in the
        /// error's source chain, printed after the message.
        #[source]
        source: Option<StoreCause>,
    },
}

/// The error beneath a [`JobStoreError::Db`], shared so the error stays `Clone`; two are equal
/// when they say the same.
#[derive(Debug, Clone)]
pub struct StoreCause(pub std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl StoreCause {
    /// Wraps `e`.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> StoreCause {
        StoreCause(std::sync::Arc::new(e))
    }
}

impl std::fmt::Display for StoreCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StoreCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for StoreCause {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for StoreCause {}
