//! The job core: pure — no I/O, no clock, no Lua. The job's phases, the events it is told, the
//! effects it answers, [`step::Step`] (one synchronous step over typed phases, human verbs
//! included), the verbs' and land's rules, the panel's aggregation, the policy's decisions as
//! data, and the records it writes. What a step needs from the world comes in as events (now,
//! in ms, is a field of each), and what it wants done goes out as effects; the judgement calls
//! go through [`judge::JobJudge`], which the runner backs with the job's policy
//! (`api/policy_judge.rs`). `tests::the_core_does_no_io` keeps it so.

pub mod decision;
pub mod events;
pub mod judge;
pub mod land;
pub mod panel;
pub mod phase;
pub mod reason;
pub mod record;
pub mod step;
pub mod verbs;

#[cfg(test)]
pub(crate) mod core_tests;
#[cfg(test)]
mod land_tests;
#[cfg(test)]
mod step_tests;
#[cfg(test)]
mod tests;
