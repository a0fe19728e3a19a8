//! Stopping a session that another oneshot drives: the decision `oneshot stop ID` and the
//! dashboard's stop share. A session is stopped only while a live oneshot holds its lock; it
//! is asked to pause with SIGTERM (what Ctrl-C in its terminal does, see `cli::signals`), and
//! may be waited for until it lets go.

use super::{Liveness, SessionDir, StoreError, live_holder, signal_holder};
use crate::machine::SessionState;
use std::time::{Duration, Instant};

/// How a stop went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The oneshot with this pid was asked to pause; nobody waited for it.
    Asked {
        /// Its pid.
        pid: u32,
    },
    /// Nobody drives the session any more; it rests in `state` (a terminal state when it
    /// ended before it could pause).
    LetGo {
        /// The state it rests in.
        state: SessionState,
    },
}

/// Why a session was not stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StopError {
    /// No live oneshot drives it: there is nothing to stop.
    #[error("{}", not_running(id, *state, *liveness))]
    NotRunning {
        /// The session.
        id: String,
        /// Its state.
        state: SessionState,
        /// Why it is not running: stale, paused or ended.
        liveness: Liveness,
    },
    /// Its state file or lock did not read.
    #[error("stop session {id}: {source}")]
    Store {
        /// The session.
        id: String,
        /// What failed.
        #[source]
        source: StoreError,
    },
    /// The signal could not be sent.
    #[error("stop session {id}: signal the oneshot that drives it: {source}")]
    Signal {
        /// The session.
        id: String,
        /// The OS's words.
        #[source]
        source: std::io::Error,
    },
    /// It was asked to pause but still drives the session after the wait.
    #[error(
        "stop session {id}: oneshot (pid {pid}) was asked to pause but still drives it after \
         {} (its agent may be using its grace period to stop); wait longer, or stop it again \
         to kill the agent now, as a second Ctrl-C would",
        humantime::format_duration(*waited)
    )]
    StillRunning {
        /// The session.
        id: String,
        /// The oneshot still holding it.
        pid: u32,
        /// How long it was waited for.
        waited: Duration,
    },
}

/// How to continue a session nobody drives.
fn resume_command(id: &str) -> String {
    format!("oneshot resume {id}")
}

fn not_running(id: &str, state: SessionState, liveness: Liveness) -> String {
    match liveness {
        Liveness::Stale => format!(
            "stop session {id}: it is not running: the oneshot that drove it is gone and left \
             it in {state} (stale); continue it with {}",
            resume_command(id)
        ),
        Liveness::Paused => format!(
            "stop session {id}: it is not running (paused in {state}); continue it with {}",
            resume_command(id)
        ),
        _ => format!("stop session {id}: it is not running ({state}); there is nothing to stop"),
    }
}

/// Asks the oneshot that drives `dir`'s session to pause — SIGTERM to the lock holder, named
/// by pid and start time in the lock file — and with `wait`, waits that long for it to let
/// go. A second stop while it is still stopping is a second signal: the session kills its
/// agent at once. [`StopError::NotRunning`] when no live oneshot drives it.
pub fn stop(dir: &SessionDir, wait: Option<Duration>) -> Result<Stopped, StopError> {
    let id = dir.id().to_string();
    let store = |source| StopError::Store {
        id: id.clone(),
        source,
    };
    let state = dir.read_state().map_err(store)?.state();
    let liveness = Liveness::of(state, &dir.lock_path());
    if !matches!(liveness, Liveness::Running { .. }) {
        return Err(StopError::NotRunning {
            id,
            state,
            liveness,
        });
    }
    let pid =
        signal_holder(&dir.lock_path(), libc::SIGTERM).map_err(|source| StopError::Signal {
            id: id.clone(),
            source,
        })?;
    let Some(pid) = pid else {
        // It let go between the two looks.
        return let_go(dir);
    };
    let Some(wait) = wait else {
        return Ok(Stopped::Asked { pid });
    };
    let deadline = Instant::now() + wait;
    while live_holder(&dir.lock_path()) == Some(pid) {
        if Instant::now() >= deadline {
            return Err(StopError::StillRunning {
                id,
                pid,
                waited: wait,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let_go(dir)
}

/// Where a session nobody drives any more rests.
fn let_go(dir: &SessionDir) -> Result<Stopped, StopError> {
    let state = dir
        .read_state()
        .map_err(|source| StopError::Store {
            id: dir.id().to_string(),
            source,
        })?
        .state();
    Ok(Stopped::LetGo { state })
}
