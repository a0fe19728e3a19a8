//! Runs one agent invocation in its own process group and inspects what it left behind.

mod evidence;
mod role;

pub use evidence::{Evidence, StopReason};
pub use role::Role;
