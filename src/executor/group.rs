//! Signalling whole process groups: graceful stop, hard kill, and liveness.

use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How often [`kill_after_grace`] looks whether the group has gone during the grace period.
const POLL: Duration = Duration::from_millis(20);

/// Sends SIGKILL to every process in group `pgid`. A group that is already gone is not an error.
pub fn kill_group(pgid: i32) {
    signal_group(pgid, Signal::SIGKILL);
}

/// Sends `signal` to group `pgid`, ignoring ESRCH (already gone); other errors are logged since
/// a stop must go on to its next step whatever happened.
pub(crate) fn signal_group(pgid: i32, signal: Signal) {
    if pgid <= 1 {
        // killpg(0) or killpg(1) would hit our own group or init's; never a recorded agent.
        tracing::error!(pgid, "refusing to signal a reserved process group");
        return;
    }
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => tracing::warn!(pgid, %signal, error = %e, "could not signal process group"),
    }
}

/// The second half of a stop: waits up to `grace` for group `pgid` to go, then SIGKILLs it.
pub(crate) async fn kill_after_grace(pgid: i32, grace: Duration) {
    let deadline = tokio::time::Instant::now() + grace;
    while group_alive(pgid) {
        if tokio::time::Instant::now() >= deadline {
            kill_group(pgid);
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether any process (other than a zombie, on Linux) is still a member of group `pgid`.
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    match killpg(Pid::from_raw(pgid), None) {
        Err(Errno::ESRCH) => false,
        // EPERM: members exist but belong to someone else.
        Ok(()) | Err(_) => has_live_member(pgid),
    }
}

/// Scans `/proc` for a member of `pgid` that is not a zombie.
#[cfg(target_os = "linux")]
fn has_live_member(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    let pgid = pgid.to_string();
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(super::identity::stat_fields)
        // Index 0 is `state`, index 2 is `pgrp` (fields 3 and 5 of stat).
        .any(|f| f.get(2) == Some(&pgid) && f.first().is_some_and(|s| s != "Z" && s != "X"))
}

/// Off Linux there is no cheap scan; trust `killpg`.
#[cfg(not(target_os = "linux"))]
fn has_live_member(_pgid: i32) -> bool {
    true
}
