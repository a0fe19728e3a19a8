//! The session state machine of seed 000 §2, as pure data and one function; the job's, of
//! seed 001, beside it in [`job`].
//!
//! No I/O, no clock, no Lua: [`next`] maps a state and a [`Trigger`] to the next state or a typed
//! [`Illegal`] error. The engine asks the policy for *decisions* (a verdict, a salvage result,
//! a guard veto) and hands them in as triggers; this table decides whether the resulting move is
//! possible at all. "Rust decides what is possible; Lua decides what is wise."

pub mod job;
mod session;
mod state;
#[cfg(test)]
mod tests;
mod trigger;

// `next` stays public: it is the table itself, the twin of `oneshot::job::next`.
pub use session::{Illegal, next};
pub use state::{SessionState, UnknownState};
pub use trigger::{Salvage, Trigger, Verdict};

pub(crate) use session::edges;
