//! The job lifecycle of seed 001, as pure data and one function (like [`crate::machine`] for a
//! session): eleven states, the transition matrix as the only legal moves, resting vs
//! transient states, and the migration of legacy state names. A session — the worker/auditor
//! loop — is what runs inside a job's EXECUTING state.
//!
//! ```
//! use oneshot::job::{JobState, JobTrigger, next};
//! let s = next(JobState::Draft, JobTrigger::Activate).unwrap();
//! assert_eq!(s, JobState::Pending);
//! let refused = next(s, JobTrigger::Approve).unwrap_err();
//! assert_eq!(
//!     refused.to_string(),
//!     "approve is not allowed in PENDING; PENDING allows: step, suspend, cancel"
//! );
//! ```

#[cfg(test)]
mod core_tests;
mod create;
pub mod decision;
mod events;
mod judge;
pub mod land;
#[cfg(test)]
mod land_tests;
pub mod landing;
mod machine;
mod migrate;
pub mod naming;
pub mod overlap;
mod panel;
mod phase;
mod reason;
pub mod record;
pub mod replay;
pub mod runner;
mod say;
mod state;
pub mod step;
#[cfg(test)]
mod step_tests;
pub mod store;
#[cfg(test)]
mod tests;
mod trigger;
pub mod verbs;
pub mod workspace;

pub use create::{CreateError, Created, Creating, create, new_id};
pub use machine::{Refused, allowed, next};
pub use migrate::{Migration, migrate};
pub use phase::JobPhase;
pub use reason::JobReason;
pub use record::{Job, JobSpec};
pub use crate::policy::redactor;
pub use say::{JobSaid, JobSayError, messages, said_of, say, sessions_holding, taken_in, waiting};
pub use state::{JobState, UnknownJobState};
pub use store::{
    Claim, Decision, JobStore, JobStoreError, JobSummary, Lease, ListFilter, SqliteStore,
};
pub use trigger::{Harvest, JobTrigger};
