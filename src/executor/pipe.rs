//! One output pipe of an agent, read so that a quiet agent costs few wake-ups.
//!
//! A pipe registered with the reactor wakes the thread at every write the agent makes, read
//! or not. So the pipe is read without a registration while output flows; only when a read
//! finds it dry is it registered, until data arrives, and then read at once. After a small
//! read (the agent trickles) the next read waits a moment for output to gather. An agent
//! printing a line every 10 ms then costs one wake-up per batch of lines (the gathering timer)
//! instead of one per line; a quiet one costs none; streaming output never waits (its reads
//! are big); and the first line after a quiet spell is read as soon as it comes.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::time::{Instant, sleep_until};

/// Largest chunk read at once; bounds memory per pipe.
const CHUNK: usize = 128 * 1024;
/// The pipe's capacity (kernel memory, not ours): an agent streaming output writes this much
/// before it waits for oneshot, so both run with fewer switches between them. Linux lets any
/// process raise a pipe to 1 MiB (`/proc/sys/fs/pipe-max-size`).
const PIPE_SIZE: i32 = 1024 * 1024;
/// Output is left to gather only after a read smaller than this: the agent is trickling. A
/// bigger read means output is streaming (or the pipe was full and the agent is blocked on
/// it), and waiting would only slow the agent down.
const GATHER_BELOW: usize = 16 * 1024;

enum State {
    /// Not registered: reads are tried directly.
    Idle(OwnedFd),
    /// Ran dry: registered until it is readable.
    Waiting(AsyncFd<OwnedFd>),
    /// End of file or an error: never read again.
    Closed,
}

/// An agent's stdout or stderr.
pub(super) struct Pipe {
    state: State,
    buf: Vec<u8>,
    /// After a small read, the next one waits until then.
    gather_until: Option<Instant>,
}

impl Pipe {
    /// Takes over a child's pipe (switched to non-blocking reads); `None` for a pipe that
    /// could not be taken over, which then reads as closed.
    pub(super) fn new(fd: Option<io::Result<OwnedFd>>) -> Pipe {
        let state = match fd {
            Some(Ok(fd)) => match set_nonblocking(&fd) {
                Ok(()) => State::Idle(fd),
                Err(e) => {
                    tracing::warn!(error = %e, "could not make an agent pipe non-blocking");
                    State::Closed
                }
            },
            Some(Err(e)) => {
                tracing::warn!(error = %e, "could not take over an agent pipe");
                State::Closed
            }
            None => State::Closed,
        };
        Pipe {
            state,
            buf: vec![0; CHUNK],
            gather_until: None,
        }
    }

    /// Still open.
    pub(super) fn is_open(&self) -> bool {
        !matches!(self.state, State::Closed)
    }

    /// The bytes of the last successful [`Pipe::next`].
    pub(super) fn chunk(&self, n: usize) -> &[u8] {
        &self.buf[..n]
    }

    /// The next chunk's length (0 at end of file, after which the pipe is closed). After a
    /// read smaller than [`GATHER_BELOW`], lets `gather` pass first; then reads, waiting for
    /// data when the pipe is dry. A zero `gather` also cuts short a wait begun by an earlier
    /// call. Cancel-safe: a
    /// dropped call loses nothing and the next one continues where it stopped.
    pub(super) async fn next(&mut self, gather: Duration) -> io::Result<usize> {
        loop {
            if let Some(at) = self.gather_until {
                // A zero `gather` (the process is gone, read what is left) skips the wait.
                if !gather.is_zero() {
                    sleep_until(at).await;
                }
                self.gather_until = None;
            }
            match &self.state {
                State::Closed => return std::future::pending().await,
                State::Waiting(afd) => {
                    let mut ready = afd.readable().await?;
                    ready.clear_ready();
                    drop(ready);
                    self.unregister();
                }
                State::Idle(fd) => match nix::unistd::read(fd, &mut self.buf) {
                    Ok(0) => {
                        self.state = State::Closed;
                        return Ok(0);
                    }
                    Ok(n) => {
                        if n < GATHER_BELOW && !gather.is_zero() {
                            self.gather_until = Some(Instant::now() + gather);
                        }
                        return Ok(n);
                    }
                    Err(Errno::EINTR) => {}
                    Err(Errno::EAGAIN) => self.register()?,
                    Err(e) => {
                        self.state = State::Closed;
                        return Err(e.into());
                    }
                },
            }
        }
    }

    fn register(&mut self) -> io::Result<()> {
        if let State::Idle(fd) = std::mem::replace(&mut self.state, State::Closed) {
            // SAFETY: an OwnedFd is a valid open descriptor, owned by the AsyncFd (and nothing
            // else) until `into_inner` hands it back.
            match unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) } {
                Ok(afd) => self.state = State::Waiting(afd),
                Err(e) => {
                    let (fd, error) = e.into_parts();
                    self.state = State::Idle(fd);
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    fn unregister(&mut self) {
        if let State::Waiting(afd) = std::mem::replace(&mut self.state, State::Closed) {
            self.state = State::Idle(afd.into_inner());
        }
    }
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    // Best effort: a smaller pipe only costs more switches.
    let _ = fcntl(fd, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
    Ok(())
}
