//! The session loop of seed 000 §1.4: load state → ask machine and policy → run the executor
//! through the pipeline → record → repeat until a terminal state.
//!
//! The engine is the only place where the pure [`crate::machine`], the [`crate::policy`] host,
//! the [`crate::executor`] and the [`crate::store`] meet. It journals before it acts: the state
//! file names the state (and, once started, the process) before a process is started, so a
//! crash at any point leaves a file that `resume` knows how to continue.

mod ctx;
mod decisions;
mod error;
mod evidence;
mod outcome;
mod process;
mod records;
mod reload;
mod reporter;
mod resume;
mod session;
mod slot;
mod spec;
mod steps;
mod transition;

pub use error::EngineError;
pub use outcome::Outcome;
pub use reporter::{NullReporter, Reporter, Status};
pub use session::Engine;
pub use spec::{EngineOptions, SessionSpec};

/// A channel to interrupt a running session: send 1 for a graceful stop (SIGTERM to the agent's
/// group, grace period, SIGKILL, state INTERRUPTED), 2 to kill at once. The CLI feeds it from
/// SIGINT/SIGTERM; an embedding program from wherever it likes.
pub fn interrupt_channel() -> (
    tokio::sync::watch::Sender<u32>,
    tokio::sync::watch::Receiver<u32>,
) {
    tokio::sync::watch::channel(0)
}
