//! Whether a session is driven right now, told from its state and its lock file.
//!
//! A state file says where a session was when it was last written; after a `kill -9` of
//! oneshot or a closed terminal it keeps saying `WORKER_EXECUTING` forever. The lock file says
//! whether the process that wrote it is still alive (see [`live_holder`]), so the two together
//! tell a running session from a crashed one without taking the lock.

use super::lock::live_holder;
use crate::machine::SessionState;
use std::path::Path;

/// What a session is doing, as far as its files tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// A live oneshot process (this pid) holds the session's lock and drives it.
    Running {
        /// The lock holder's pid.
        pid: u32,
    },
    /// Its state says a step was under way (a process running, or just created), but no
    /// oneshot drives it: the one that did died (`kill -9`, a closed terminal, a crash).
    /// `oneshot resume ID` continues it.
    Stale,
    /// Between two steps (or INTERRUPTED) and no oneshot drives it: paused, by the user or by
    /// a crash between steps. `oneshot resume ID` continues it.
    Paused,
    /// COMPLETED, FAILED or REJECTED: nothing left to drive.
    Ended,
}

impl Liveness {
    /// The liveness of a session in `state` whose lock file is `lock`. For a session that is
    /// not over, reads the lock file (a few bytes) and `/proc` for the holder; never takes the
    /// lock. An ended session is not looked at further (a listing of hundreds stays fast), even
    /// while its oneshot is still exiting: there is nothing left for it to do.
    pub fn of(state: SessionState, lock: &Path) -> Liveness {
        if state.is_terminal() {
            return Liveness::Ended;
        }
        if let Some(pid) = live_holder(lock) {
            return Liveness::Running { pid };
        }
        if state.is_executing() || state == SessionState::Created {
            Liveness::Stale
        } else {
            Liveness::Paused
        }
    }

    /// Whether `oneshot resume ID` would pick the session up (not running, not ended).
    pub fn resumable(self) -> bool {
        matches!(self, Liveness::Stale | Liveness::Paused)
    }

    /// `running`, `stale`, `paused` or `ended`: the word `list` and `--json` show.
    pub fn as_str(self) -> &'static str {
        match self {
            Liveness::Running { .. } => "running",
            Liveness::Stale => "stale",
            Liveness::Paused => "paused",
            Liveness::Ended => "ended",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SessionLock;

    #[test]
    fn the_lock_holder_decides_between_running_and_stale() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("lock");
        let exec = SessionState::WorkerExecuting;
        assert_eq!(Liveness::of(exec, &lock), Liveness::Stale);
        assert_eq!(
            Liveness::of(SessionState::AuditPending, &lock),
            Liveness::Paused
        );
        assert_eq!(
            Liveness::of(SessionState::Interrupted, &lock),
            Liveness::Paused
        );
        assert_eq!(
            Liveness::of(SessionState::Completed, &lock),
            Liveness::Ended
        );
        let held = SessionLock::acquire(&lock).unwrap();
        let me = std::process::id();
        assert_eq!(Liveness::of(exec, &lock), Liveness::Running { pid: me });
        drop(held);
        // A pid that was recycled since is not the holder.
        std::fs::write(&lock, format!("{me} 1")).unwrap();
        assert_eq!(Liveness::of(exec, &lock), Liveness::Stale);
        assert!(Liveness::Stale.resumable() && !Liveness::Ended.resumable());
    }
}
