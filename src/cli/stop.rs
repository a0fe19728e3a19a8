//! `oneshot stop ID`: pause a session that runs in another terminal, as Ctrl-C there would.
//! The decision is the library's ([`oneshot::store::stop`], which the dashboard's stop uses
//! too); this says how it went.

use super::show::resume_command;
use anyhow::{Result, anyhow};
use oneshot::store::{StopError, Stopped, Store};
use std::time::Duration;

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
    match oneshot::store::stop(&dir, args.wait) {
        Ok(Stopped::Asked { pid }) => outln!("asked oneshot (pid {pid}) to pause session {id}"),
        Ok(Stopped::LetGo { state }) if state.is_terminal() => {
            outln!("session {id} ended before it could pause: {state}")
        }
        Ok(Stopped::LetGo { state }) => outln!(
            "session {id} paused in {state}; continue it with {}",
            resume_command(&id)
        ),
        // The CLI's own words for what to do next: its flags.
        Err(StopError::StillRunning { pid, waited, .. }) => {
            return Err(anyhow!(
                "stop session {id}: oneshot (pid {pid}) was asked to pause but still drives it \
                 after {} (its agent may be using its grace period to stop); wait longer \
                 (--wait 2m), or run oneshot stop {id} again to kill the agent now, as a second \
                 Ctrl-C would",
                humantime::format_duration(waited)
            ));
        }
        Err(e) => return Err(e.into()),
    }
    Ok(0)
}
