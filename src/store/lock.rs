//! One process per session: an exclusive advisory lock on `<session>/lock`.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Holds the session's exclusive lock until dropped. The kernel releases it when the process
/// dies, so a kill -9 never leaves a stale lock behind.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

/// Why the lock could not be taken (the source of [`StoreError::Locked`](super::StoreError)).
#[derive(Debug, thiserror::Error)]
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
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut s = String::new();
                let _ = file.read_to_string(&mut s);
                return Err(LockError::Held {
                    pid: s.trim().parse().ok(),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(SessionLock { _file: file })
    }
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
}
