//! The job state machine of seed 001, beside the session's ([`crate::machine`]): eleven
//! states, the transition matrix as the only legal moves, resting vs transient states, and the
//! migration of legacy state names. Pure data and one function — no I/O, no clock, no Lua —
//! so the job core ([`crate::job::step`]), replay, the runners and the dashboard all read the
//! same table.

mod migrate;
mod state;
mod table;
#[cfg(test)]
mod tests;
mod trigger;

pub use migrate::{Migration, migrate};
pub use state::{JobState, UnknownJobState};
pub use table::{Refused, allowed, next};
pub use trigger::{Harvest, JobTrigger};
