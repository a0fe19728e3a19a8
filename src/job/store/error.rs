//! TEMPORARY stand-in (replaced by the real store's errors on merge).
#![allow(missing_docs)]
use crate::job::JobState;
#[derive(Debug, thiserror::Error)]
pub enum JobStoreError {
    #[error("job {id} not found")]
    NotFound { id: String },
    #[error("job id {id} is ambiguous: {}", matches.join(", "))]
    Ambiguous { id: String, matches: Vec<String> },
    #[error("job {id}: the lease (fence {fence}) was lost")]
    Fenced { id: String, fence: u64 },
    #[error("job {id} moved: it was {expected}, it is {now}")]
    Conflict {
        id: String,
        expected: JobState,
        now: JobState,
    },
    #[error("job {id} is held by runner {runner}")]
    Busy { id: String, runner: String },
    #[error("job {id} is corrupt: {message}")]
    Corrupt { id: String, message: String },
    #[error("job store {}: {message}", path.display())]
    Db {
        path: std::path::PathBuf,
        message: String,
    },
}
