//! Runs one agent invocation in its own process group and inspects what it left behind.
//!
//! # How it works
//!
//! A [`CommandTemplate`] is split once with shell-word rules and never run through a shell.
//! [`Invocation::spawn`] starts it as the leader of a new process group, with the prompt on
//! stdin and in a private file named by `ONESHOT_PROMPT_FILE` (any size), and in
//! `ONESHOT_PROMPT` and argv when it fits there ([`PROMPT_INLINE_MAX`]), and returns a [`Running`] handle whose drop kills the
//! whole group. On Linux the group's leader is a small reaper between oneshot and the agent
//! (`shim.rs`): a child subreaper, so whatever the agent starts — in another group, another
//! session, double-forked, with its environment cleared — stays below it and is killed when the
//! agent ends or oneshot dies. [`Running::supervise`] hands it to a task that reads both pipes and reaps the
//! child, reporting over a channel, and carries out the engine's control messages: a graceful
//! stop (SIGTERM to the group, a grace period, SIGKILL) or a kill. The task decides nothing;
//! timers and interrupts are the session's decision core's business. Before a run the engine
//! takes a [`Snapshot`] of the workdir; after a crash, a hang or an interrupt, [`recover`]
//! compares against it and gathers [`Evidence`] for the salvage decision. On resume, [`fence`]
//! makes sure an agent left over from a dead oneshot is stopped, without ever touching a
//! process that merely inherited its pid.

pub mod confine;
mod error;
mod fence;
mod group;
mod identity;
mod stray;
mod invocation;
mod pipe;
mod prompt_file;
mod recover;
mod running;
#[cfg(target_os = "linux")]
mod shim;
mod snapshot;
mod supervise;
mod template;

pub use error::ExecError;
pub use fence::{FenceOutcome, fence};
pub use group::{group_alive, kill_group};
pub use identity::{identity_of, is_zombie, start_time};
pub use invocation::{Invocation, StdinMode};
pub use recover::{Stopped, recover, recover_with};
pub use running::Running;
pub use stray::{mark, sweep, sweep_started_before, ticks_now};
pub use snapshot::{DEFAULT_IGNORE_GLOBS, Snapshot, default_ignore};
pub use supervise::{Control, ProcessEvent, Supervised};
// The decision core's nouns, which the executor fills in; re-exported for its own tests.
pub use crate::process::{Evidence, ProcessIdentity, Role, StopReason, TranscriptFacts};
pub use template::{
    CommandTemplate, PROMPT_FILE_PLACEHOLDER, PROMPT_INLINE_MAX, PROMPT_PLACEHOLDER,
};
