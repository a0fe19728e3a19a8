//! The decision core's nouns for an agent process: which side of the loop it plays ([`Role`]),
//! who it is ([`ProcessIdentity`]), why it stopped ([`StopReason`]), what it left behind
//! ([`Evidence`]) and how it was confined ([`Sandbox`]).
//!
//! These are data only — no process is started, read or signalled here. The session's decision
//! core, the policy, the store's records and replay speak of processes in these words; the
//! executor, which runs them, fills them in. Keeping them below all of those is what lets the
//! decision core be compiled and tested without the executor.

mod evidence;
mod identity;
mod role;
mod sandbox;

pub use evidence::{Evidence, StopReason, TranscriptFacts};
pub use identity::ProcessIdentity;
pub use role::Role;
pub use sandbox::{NetworkMode, Sandbox};
