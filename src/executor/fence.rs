//! Fencing on resume: make sure the agent a dead oneshot left behind cannot keep writing.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::group::{group_alive, kill_after_grace};
use super::identity::start_time;
use super::{ExecError, ProcessIdentity};

/// What [`fence`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum FenceOutcome {
    /// Nothing of the recorded group is alive (or the pid now belongs to another process).
    AlreadyGone,
    /// The recorded group was alive and has been terminated.
    Killed {
        /// The group that was stopped.
        pgid: i32,
    },
}

/// Stops the process group recorded in `identity` if it is still alive: SIGTERM, `grace`,
/// SIGKILL. Used on resume after oneshot itself was killed while an agent ran.
///
/// A group is only touched when it is still ours: it must be led by the recorded pid (every
/// agent leads its own group), and on Linux the record must carry a start time and the pid must
/// still have the
/// recorded start time, or be gone while members of its group remain (Linux never hands out a
/// pid that is still some group's id, so the group is the one we created). A pid that now
/// belongs to another process means our group died and the number was recycled: nothing is
/// killed and the result is [`FenceOutcome::AlreadyGone`]. Off Linux no start time is
/// recorded, so a live group with the recorded pgid is assumed to be ours.
///
/// Fails only when the group exists but cannot be signalled (EPERM: it belongs to another user),
/// in which case the caller must not resume over it.
pub async fn fence(identity: &ProcessIdentity, grace: Duration) -> Result<FenceOutcome, ExecError> {
    let pgid = identity.pgid;
    if pgid <= 1 || !group_alive(pgid) {
        return Ok(FenceOutcome::AlreadyGone);
    }
    // Every agent leads its own group; a record saying otherwise, or (on Linux, where every
    // spawn records one) without a start time to check, names no group of ours.
    if identity.pid != pgid || (cfg!(target_os = "linux") && identity.start_time.is_none()) {
        tracing::warn!(
            pid = identity.pid,
            pgid,
            "the recorded process cannot be proven to be ours; not fencing it"
        );
        return Ok(FenceOutcome::AlreadyGone);
    }
    if let Some(recorded) = identity.start_time {
        match start_time(identity.pid) {
            Some(now) if now != recorded => {
                tracing::warn!(
                    pid = identity.pid,
                    recorded,
                    now,
                    "recorded pid was recycled by another process; not fencing it"
                );
                return Ok(FenceOutcome::AlreadyGone);
            }
            // Same start time, or the leader is gone but its group lives on.
            _ => {}
        }
    }
    tracing::info!(pgid, "stopping process group left over from a previous run");
    match killpg(Pid::from_raw(pgid), Signal::SIGTERM) {
        Ok(()) => {}
        Err(Errno::ESRCH) => return Ok(FenceOutcome::AlreadyGone),
        Err(source) => return Err(ExecError::Signal { pgid, source }),
    }
    kill_after_grace(pgid, grace).await;
    Ok(FenceOutcome::Killed { pgid })
}
