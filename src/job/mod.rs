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

mod api;
mod core;
pub mod runner;
pub mod store;
pub mod workspace;

// The core's and the front doors' modules, at the paths they always had.
use self::api::{create, say};
pub use self::api::{landing, naming, overlap, replay};
pub use self::core::{decision, land, record, step};
use self::core::{events, judge, panel, phase, reason};

/// A human's verbs: what each does to a job, judged by the core ([`crate::job::step::Step`]),
/// and [`give`](verbs::give), the front door that reads the store and writes the core's decision.
pub mod verbs {
    pub use super::api::give::*;
    pub use super::core::verbs::*;
}

pub use crate::machine::job::{
    Harvest, JobState, JobTrigger, Migration, Refused, UnknownJobState, allowed, migrate, next,
};
pub use crate::policy::redactor;
pub use create::{CreateError, Created, Creating, create, new_id};
pub use phase::JobPhase;
pub use reason::JobReason;
pub use record::{Job, JobSpec};
pub use say::{JobSaid, JobSayError, messages, said_of, say, sessions_holding, taken_in, waiting};
pub use store::{
    Claim, Decision, JobStore, JobStoreError, JobSummary, Lease, ListFilter, SqliteStore,
};
