//! One process per session: an exclusive advisory lock on `<session>/lock`.
//!
//! The holder writes `PID START_TIME` into the file (the start time as in `/proc/PID/stat`, so
//! a recycled pid is never taken for the holder). Readers that only want to know whether the
//! session is still driven ([`holder_alive`]) read that and never touch the lock: taking it,
//! even for an instant, would make a concurrent `resume` fail.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Holds the session's exclusive lock until dropped. The kernel releases it when the process
/// dies, so a kill -9 never leaves a stale lock behind.
#[derive(Debug)]
pub struct SessionLock {
    file: File,
}

impl Drop for SessionLock {
    /// Clears the holder's name before the lock goes (with the file), so a reader of the file
    /// never takes a process that let go of the session for its driver.
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

/// Why the lock could not be taken (the source of [`StoreError::Locked`](super::StoreError)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another live process holds it.
    #[error(
        "{} holds it; wait for it to finish or stop it",
        match .pid { Some(p) => format!("pid {p}"), None => "another process".to_string() }
    )]
    Held {
        /// The pid the holder wrote into the lock file, if readable.
        pid: Option<u32>,
    },
    /// The lock file could not be opened or locked.
    #[error("lock {path}")]
    Io {
        /// The lock file.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl SessionLock {
    /// Takes the lock without waiting, and records our pid in the file for the next one to read.
    pub fn acquire(path: &Path) -> Result<SessionLock, LockError> {
        let io = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        // Not a plain open: a FIFO in place of the lock file would make the read below wait
        // forever, and a symbolic link would have the holder truncate a file elsewhere.
        let mut file = super::regular::open_own(
            path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )
        .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut s = String::new();
                let _ = file.read_to_string(&mut s);
                return Err(LockError::Held {
                    pid: Holder::parse(&s).map(|h| h.pid),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let me = std::process::id();
        match crate::executor::start_time(me as i32) {
            Some(start) => write!(file, "{me} {start}"),
            None => write!(file, "{me}"),
        }
        .map_err(io)?;
        file.flush().map_err(io)?;
        Ok(SessionLock { file })
    }
}

/// What the holder wrote into the lock file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Holder {
    pub(super) pid: u32,
    start_time: Option<u64>,
}

impl Holder {
    /// `PID` or `PID START_TIME`.
    fn parse(text: &str) -> Option<Holder> {
        let mut words = text.split_whitespace();
        let pid = words.next()?.parse().ok()?;
        let start_time = words.next().and_then(|w| w.parse().ok());
        Some(Holder { pid, start_time })
    }

    /// The process that wrote this is still running (not merely a process with its pid).
    pub(super) fn alive(self) -> bool {
        let Ok(pid) = i32::try_from(self.pid) else {
            return false;
        };
        // A zombie is gone too: it died and only waits for its parent to notice.
        if crate::executor::is_zombie(pid) {
            return false;
        }
        match (self.start_time, crate::executor::start_time(pid)) {
            (Some(recorded), Some(now)) => recorded == now,
            (Some(_), None) => false,
            // No start time to compare (another platform): whether the pid exists at all.
            (None, _) => nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok(),
        }
    }
}

/// Whether the process that last took the lock at `path` is still alive, judged from what it
/// wrote there, without taking or testing the lock. A missing or empty file means no one drives
/// the session.
pub fn holder_alive(path: &Path) -> bool {
    live_holder(path).is_some()
}

/// The pid of the process that holds the lock at `path`, if it is alive (see
/// [`holder_alive`]).
pub fn live_holder(path: &Path) -> Option<u32> {
    read_holder(path).filter(|h| h.alive()).map(|h| h.pid)
}

/// Who the lock file at `path` names, alive or not.
pub(super) fn read_holder(path: &Path) -> Option<Holder> {
    // A lock file that is not a regular file names no one (and is never waited on).
    super::regular::read_to_string(path)
        .ok()
        .and_then(|s| Holder::parse(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_refused_with_the_holders_pid() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lock");
        let held = SessionLock::acquire(&p).unwrap();
        match SessionLock::acquire(&p) {
            Err(LockError::Held { pid }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("expected Held, got {other:?}"),
        }
        drop(held);
        SessionLock::acquire(&p).unwrap();
    }

    #[test]
    fn the_holder_is_seen_alive_without_taking_the_lock_and_gone_after() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lock");
        assert!(!holder_alive(&p), "no file: nobody");
        let held = SessionLock::acquire(&p).unwrap();
        assert!(holder_alive(&p));
        // Asking did not take the lock: a second acquirer still finds it held by us.
        assert!(matches!(
            SessionLock::acquire(&p),
            Err(LockError::Held { pid: Some(pid) }) if pid == std::process::id()
        ));
        drop(held);
        assert!(!holder_alive(&p), "let go: the file names no one");
        // kill -9 leaves the name of a process that is gone.
        let dead = std::process::Command::new("true").spawn().unwrap();
        let pid = dead.id();
        let _ = dead.wait_with_output();
        std::fs::write(&p, format!("{pid} 1")).unwrap();
        assert!(!holder_alive(&p), "a pid that exited");
        // A live pid with another start time is a recycled pid, not the holder.
        let me = std::process::id();
        std::fs::write(&p, format!("{me} 1")).unwrap();
        assert!(!holder_alive(&p), "a recycled pid");
        std::fs::write(&p, format!("{me}")).unwrap();
        assert!(holder_alive(&p), "an old-format file with a live pid");
    }
}
