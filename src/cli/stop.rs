//! `oneshot stop ID`: pause a session that runs in another terminal, as Ctrl-C there would.

use super::show::resume_command;
use anyhow::{Context, Result, anyhow};
use oneshot::store::{Liveness, SessionDir, Store, live_holder, signal_holder};
use std::time::{Duration, Instant};

/// What `stop` was asked to do.
#[derive(Debug, Clone, Copy)]
pub struct StopArgs {
    /// How long to wait for the session to let go; `None`: do not wait.
    pub wait: Option<Duration>,
}

/// Sends SIGTERM — "pause" for a session (see `cli::signals`) — to the oneshot that drives
/// session `id`, identified by pid and start time from the lock file, then waits until it let
/// go of the session and says where it paused. A second `stop` while it is still stopping is a
/// second signal: the session kills its agent at once, as on a second Ctrl-C.
pub fn stop(store: &Store, id: &str, args: StopArgs) -> Result<i32> {
    let dir = store.open(id)?;
    let id = dir.id().to_string();
    let state = dir.read_state()?.state();
    match Liveness::of(state, &dir.lock_path()) {
        Liveness::Running { .. } => {}
        Liveness::Stale => {
            return Err(anyhow!(
                "stop session {id}: it is not running: the oneshot that drove it is gone and \
                 left it in {state} (stale); continue it with {}",
                resume_command(&id)
            ));
        }
        Liveness::Paused => {
            return Err(anyhow!(
                "stop session {id}: it is not running (paused in {state}); continue it with {}",
                resume_command(&id)
            ));
        }
        Liveness::Ended => {
            return Err(anyhow!(
                "stop session {id}: it is not running ({state}); there is nothing to stop"
            ));
        }
    }
    let pid = signal_holder(&dir.lock_path(), libc::SIGTERM)
        .with_context(|| format!("stop session {id}: signal the oneshot that drives it"))?;
    let Some(pid) = pid else {
        // It let go between the two looks: report where it is now.
        return report(&dir);
    };
    let Some(wait) = args.wait else {
        outln!("asked oneshot (pid {pid}) to pause session {id}");
        return Ok(0);
    };
    let deadline = Instant::now() + wait;
    while live_holder(&dir.lock_path()) == Some(pid) {
        if Instant::now() >= deadline {
            return Err(anyhow!(
                "stop session {id}: oneshot (pid {pid}) was asked to pause but still drives it \
                 after {} (its agent may be using its grace period to stop); wait longer \
                 (--wait 2m), or run oneshot stop {id} again to kill the agent now, as a second \
                 Ctrl-C would",
                humantime::format_duration(wait)
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    report(&dir)
}

/// Where a session that nobody drives any more stands.
fn report(dir: &SessionDir) -> Result<i32> {
    let id = dir.id();
    let state = dir.read_state()?.state();
    if state.is_terminal() {
        outln!("session {id} ended before it could pause: {state}");
    } else {
        outln!(
            "session {id} paused in {state}; continue it with {}",
            resume_command(id)
        );
    }
    Ok(0)
}
