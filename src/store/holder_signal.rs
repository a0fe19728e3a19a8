//! Signalling the process that drives a session (`oneshot stop`), and never another one.
//!
//! The lock file names the holder by pid and start time. A pid alone is not enough: the holder
//! may have died and the pid been given to an unrelated process. So the process is pinned
//! first (a pidfd refers to that one process for good, whatever happens to the number), then
//! checked against the recorded start time, then signalled through the pidfd.

use super::lock::read_holder;
use std::io;
use std::path::Path;

/// Sends `signal` to the live holder of the session lock at `path` and returns its pid;
/// `Ok(None)` when no live process holds it (none ever did, it let go, or it died — its pid
/// possibly reused since), in which case nothing was signalled.
pub fn signal_holder(path: &Path, signal: i32) -> io::Result<Option<u32>> {
    let Some(holder) = read_holder(path) else {
        return Ok(None);
    };
    let Ok(pid) = i32::try_from(holder.pid) else {
        return Ok(None);
    };
    match Pinned::open(pid)? {
        Some(pinned) => {
            // Checked after pinning: if the start time still matches now, the pidfd is the
            // holder's and cannot come to mean another process.
            if !holder.alive() {
                return Ok(None);
            }
            pinned.signal(signal)?;
        }
        None => {
            // No pidfd here (an old kernel, another platform): check and signal at once; the
            // window between the two is as short as it can be made.
            if !holder.alive() {
                return Ok(None);
            }
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::try_from(signal).map_err(io::Error::from)?,
            )
            .map_err(io::Error::from)?;
        }
    }
    Ok(Some(holder.pid))
}

/// A pidfd: one process, for as long as the descriptor is open.
struct Pinned(std::os::fd::OwnedFd);

impl Pinned {
    /// `Ok(None)` when the system has no pidfds; a process that is already gone reads as
    /// pinned-and-dead, so the caller's liveness check says no.
    #[cfg(target_os = "linux")]
    fn open(pid: i32) -> io::Result<Option<Pinned>> {
        use std::os::fd::FromRawFd;
        // SAFETY: a plain syscall; on success it returns a new descriptor we own.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd >= 0 {
            // SAFETY: `fd` was just returned to us by the kernel and nothing else owns it.
            return Ok(Some(Pinned(unsafe {
                std::os::fd::OwnedFd::from_raw_fd(fd as i32)
            })));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENOSYS) => Ok(None),
            // Gone already: the liveness check after this will say so.
            Some(libc::ESRCH) => Ok(None),
            _ => Err(e),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn open(_pid: i32) -> io::Result<Option<Pinned>> {
        Ok(None)
    }

    #[cfg(target_os = "linux")]
    fn signal(&self, signal: i32) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain syscall on a descriptor we own; no siginfo is passed.
        let r = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.0.as_raw_fd(),
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn signal(&self, _signal: i32) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_recorded_process_is_signalled() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("lock");
        assert_eq!(signal_holder(&lock, libc::SIGTERM).unwrap(), None);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        // The right pid with another start time: a recycled pid, left alone.
        std::fs::write(&lock, format!("{pid} 1")).unwrap();
        assert_eq!(signal_holder(&lock, libc::SIGTERM).unwrap(), None);
        assert!(child.try_wait().unwrap().is_none(), "not signalled");
        let start = crate::executor::start_time(pid as i32).unwrap();
        std::fs::write(&lock, format!("{pid} {start}")).unwrap();
        assert_eq!(signal_holder(&lock, libc::SIGTERM).unwrap(), Some(pid));
        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGTERM)
        );
        // Dead now (reaped): nothing to signal.
        assert_eq!(signal_holder(&lock, libc::SIGTERM).unwrap(), None);
    }
}
