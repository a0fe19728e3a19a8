//! Running a spawned process to its end: output, timers, interrupts and exit in one `select!`.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior, sleep_until};

use super::group::{group_alive, kill_group, signal_group};
use super::{OutputSink, RunOutcome, Running, StopReason};
use crate::pipeline::Stream;

/// Largest chunk read at once; bounds memory per pipe.
const CHUNK: usize = 64 * 1024;
/// After the direct child exits, how long grandchildren may keep the pipes open before the
/// rest of the group is killed (nextest's `detect_fd_leaks` idea).
const LEAK_WAIT: Duration = Duration::from_millis(300);
/// After the final SIGKILL, how long to read what is still buffered in the pipes.
const FINAL_DRAIN: Duration = Duration::from_millis(100);
/// Status-line refresh period.
const TICK: Duration = Duration::from_secs(1);
/// A deadline that never comes, for disabled timer branches (their futures are still built).
const NEVER: Duration = Duration::from_secs(60 * 60 * 24 * 365);

impl Running {
    /// Runs the process to its end, passing every chunk of output to `sink`.
    ///
    /// Stops it (SIGTERM to the group, `grace`, SIGKILL) when nothing was printed for the
    /// inactivity timeout, when the wall-clock timeout runs out ([`StopReason::WorkerTimeout`]
    /// for either role), or when `interrupts` reaches 1. A value of 2 or more kills the group
    /// at once. The counter counts interrupts for this run; a value already set when `drive`
    /// starts is acted on immediately. After the direct child exits, grandchildren get a short
    /// moment to close the pipes, then whatever is left of the group is killed: nothing
    /// outlives the run. Calling it again returns the same outcome.
    ///
    /// Cancel-safe in the sense that matters: dropping the future mid-run leaves the group
    /// running under this handle, and dropping the handle kills it.
    pub async fn drive(
        &mut self,
        sink: &mut dyn OutputSink,
        interrupts: &mut watch::Receiver<u32>,
    ) -> RunOutcome {
        if let Some(outcome) = self.outcome {
            return outcome;
        }
        let pgid = self.identity.pgid;
        let mut stopper = Stopper {
            pgid,
            grace: self.grace,
            reason: None,
            kill_at: None,
        };
        let mut pipes = Pipes::new(self.stdout.take(), self.stderr.take());
        let mut ticker = tokio::time::interval_at(Instant::now() + TICK, TICK);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut interrupts_open = true;
        stopper.interrupt(*interrupts.borrow_and_update(), sink);

        let wall_deadline = self.wall_timeout.map(|w| self.started + w);
        let status = loop {
            let idle_deadline = pipes.last_output + self.inactivity_timeout;
            let kill_at = stopper.kill_at;
            let running = stopper.reason.is_none();
            tokio::select! {
                result = self.child.wait() => break result,
                read = read_chunk(&mut pipes.stdout, &mut pipes.out_buf), if pipes.stdout.is_some() => {
                    pipes.handle(Stream::Stdout, read, sink);
                }
                read = read_chunk(&mut pipes.stderr, &mut pipes.err_buf), if pipes.stderr.is_some() => {
                    pipes.handle(Stream::Stderr, read, sink);
                }
                _ = sleep_until(idle_deadline), if running => {
                    stopper.request(StopReason::InactivityTimeout, sink);
                }
                _ = sleep_until(wall_deadline.unwrap_or_else(|| Instant::now() + NEVER)),
                    if running && wall_deadline.is_some() => {
                    stopper.request(StopReason::WorkerTimeout, sink);
                }
                _ = sleep_until(kill_at.unwrap_or_else(|| Instant::now() + NEVER)), if kill_at.is_some() => {
                    stopper.kill_now(StopReason::Interrupted, sink);
                }
                changed = interrupts.changed(), if interrupts_open => match changed {
                    Ok(()) => stopper.interrupt(*interrupts.borrow_and_update(), sink),
                    Err(_) => interrupts_open = false,
                },
                _ = ticker.tick() => sink.tick(pipes.last_output.elapsed()),
            }
        };
        let status = status
            .inspect_err(|e| tracing::warn!(pgid, error = %e, "could not wait for the agent"))
            .ok();

        // Grandchildren that still hold the pipes get a moment (or the rest of a graceful
        // stop's grace period) to finish writing; then the group goes.
        let mut drain_until = Instant::now() + LEAK_WAIT;
        if let Some(kill_at) = stopper.kill_at {
            drain_until = drain_until.max(kill_at);
        }
        pipes
            .drain(drain_until, sink, Some(interrupts), &mut ticker)
            .await;
        if group_alive(pgid) {
            tracing::debug!(
                pgid,
                "killing processes left in the group after the agent exited"
            );
            kill_group(pgid);
        }
        pipes
            .drain(Instant::now() + FINAL_DRAIN, sink, None, &mut ticker)
            .await;
        let outcome = RunOutcome {
            exit_code: status.and_then(|s: ExitStatus| s.code()),
            signal: status.and_then(|s| s.signal()),
            stop: stopper.reason,
            duration: self.started.elapsed(),
        };
        self.outcome = Some(outcome);
        outcome
    }
}

/// Carries out stops: records the first reason, sends SIGTERM, arms the SIGKILL deadline.
struct Stopper {
    pgid: i32,
    grace: Duration,
    reason: Option<StopReason>,
    kill_at: Option<Instant>,
}

impl Stopper {
    /// A graceful stop; a second request while stopping changes nothing. The sink hears of it
    /// before any signal is sent (journal first, act second).
    fn request(&mut self, reason: StopReason, sink: &mut dyn OutputSink) {
        if self.reason.is_some() {
            return;
        }
        tracing::debug!(pgid = self.pgid, %reason, "stopping agent group");
        sink.stopping(reason);
        self.reason = Some(reason);
        signal_group(self.pgid, Signal::SIGTERM);
        self.kill_at = Some(Instant::now() + self.grace);
    }

    /// SIGKILL now; `reason` is recorded only if no stop was under way.
    fn kill_now(&mut self, reason: StopReason, sink: &mut dyn OutputSink) {
        if self.reason.is_none() {
            sink.stopping(reason);
        }
        self.reason.get_or_insert(reason);
        self.kill_at = None;
        signal_group(self.pgid, Signal::SIGKILL);
    }

    /// The interrupt counter moved to `count`: 1 stops gracefully, 2 or more kills.
    fn interrupt(&mut self, count: u32, sink: &mut dyn OutputSink) {
        match count {
            0 => {}
            1 => self.request(StopReason::Interrupted, sink),
            _ => self.kill_now(StopReason::Interrupted, sink),
        }
    }
}

/// The two output pipes with their read buffers and the time of the last output.
struct Pipes {
    stdout: Option<tokio::process::ChildStdout>,
    stderr: Option<tokio::process::ChildStderr>,
    out_buf: Vec<u8>,
    err_buf: Vec<u8>,
    last_output: Instant,
}

impl Pipes {
    fn new(
        stdout: Option<tokio::process::ChildStdout>,
        stderr: Option<tokio::process::ChildStderr>,
    ) -> Self {
        Self {
            stdout,
            stderr,
            out_buf: vec![0; CHUNK],
            err_buf: vec![0; CHUNK],
            last_output: Instant::now(),
        }
    }

    /// Passes a chunk on, or closes the pipe at EOF or on a read error.
    fn handle(&mut self, stream: Stream, read: std::io::Result<usize>, sink: &mut dyn OutputSink) {
        match (read, stream) {
            (Ok(n), Stream::Stdout) if n > 0 => sink.output(stream, &self.out_buf[..n]),
            (Ok(n), Stream::Stderr) if n > 0 => sink.output(stream, &self.err_buf[..n]),
            (result, Stream::Stdout) => {
                log_read_error(stream, result);
                self.stdout = None;
                return;
            }
            (result, Stream::Stderr) => {
                log_read_error(stream, result);
                self.stderr = None;
                return;
            }
        }
        self.last_output = Instant::now();
    }

    /// Reads until both pipes close or `until`. A second-or-later interrupt cuts it short.
    async fn drain(
        &mut self,
        until: Instant,
        sink: &mut dyn OutputSink,
        mut interrupts: Option<&mut watch::Receiver<u32>>,
        ticker: &mut tokio::time::Interval,
    ) {
        while self.stdout.is_some() || self.stderr.is_some() {
            tokio::select! {
                read = read_chunk(&mut self.stdout, &mut self.out_buf), if self.stdout.is_some() => {
                    self.handle(Stream::Stdout, read, sink);
                }
                read = read_chunk(&mut self.stderr, &mut self.err_buf), if self.stderr.is_some() => {
                    self.handle(Stream::Stderr, read, sink);
                }
                _ = sleep_until(until) => return,
                changed = changed(&mut interrupts) => match changed {
                    Some(count) if count >= 2 => return,
                    Some(_) => {}
                    None => interrupts = None,
                },
                _ = ticker.tick() => sink.tick(self.last_output.elapsed()),
            }
        }
    }
}

/// Waits for the next counter value; `None` once the sender is gone. Pending forever when
/// there is no receiver.
async fn changed(rx: &mut Option<&mut watch::Receiver<u32>>) -> Option<u32> {
    match rx {
        Some(rx) => match rx.changed().await {
            Ok(()) => Some(*rx.borrow_and_update()),
            Err(_) => None,
        },
        None => std::future::pending().await,
    }
}

/// One cancel-safe read; pending forever on a closed pipe (its branch is disabled anyway).
async fn read_chunk<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

fn log_read_error(stream: Stream, result: std::io::Result<usize>) {
    if let Err(e) = result {
        tracing::warn!(stream = stream.as_str(), error = %e, "could not read agent output");
    }
}
