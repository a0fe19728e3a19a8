//! The engine: one async loop around the session's decision core.
//!
//! # How it works
//!
//! The loop does I/O and nothing else. It turns what happens — a process's output and exit
//! (from its supervising task, see [`crate::executor::Supervised`]), the inactivity and
//! wall-clock timers, interrupts, a policy reload — into [`Event`](crate::session::Event)s,
//! hands each to [`Session::step`](crate::session::Session::step) with the live policy
//! deciding, and carries out the [`Effect`](crate::session::Effect)s it returns in order:
//! write the state file (atomically, coalescing consecutive journals into one write before
//! each act), append log records (redacted, long strings as blobs), start, stop or kill a
//! process, inspect the workdir, fence a group left by a dead oneshot, tell the
//! [`Observer`]. It is the nextest dispatcher's shape: decisions in a synchronous function,
//! I/O in one `select!`.
//!
//! The engine holds a Lua state and is therefore not `Send`: drive it with
//! [`Engine::run_blocking`] (which makes its own single-threaded runtime), or `.await`
//! [`Engine::run`] on the task that owns it (a current-thread runtime or a `LocalSet`). Agents
//! are spawned from the thread running the loop; on Linux they get a parent-death signal tied
//! to that thread, so it must live as long as the session (any `block_on` thread does).

mod carry;
mod checks;
mod core;
use core::Core;
mod egress;
mod error;
mod evidence;
mod inbox;
pub(crate) mod interrupt;
mod open;
mod process;
mod records;
mod reserve;
mod run;
mod slot;
mod spec;
mod update;

pub use error::EngineError;
pub use interrupt::Interrupt;
pub use open::Engine;
pub use spec::{Options, SessionBuilder};
pub use update::{Observer, ProcessClock, Silent, Status, Update, channel_observer};

/// Finding and killing what a session's agents left behind (by the environment mark every
/// agent process inherits): for a guard that outlives an embedding program, as the CLI's does.
pub use crate::executor::{
    mark as session_mark, sweep as sweep_session, sweep_started_before, ticks_now,
};
// The pipeline's line type an observer receives, re-exported because the pipeline is internal.
pub use crate::pipeline::{Line, Stream};
