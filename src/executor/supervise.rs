//! A running process as a task: it reads the pipes and reaps the child, sends what happens
//! over a channel, and takes control messages (graceful stop, kill). It decides nothing — the
//! session's decision core does, from the events; the task only carries out stops.
//!
//! The split follows watchexec's job/task: the engine holds a [`Supervised`] handle, the task
//! owns the [`Running`] child, and dropping the handle aborts the task, whose drop kills the
//! whole process group.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use super::Running;
use super::pipe::Pipe;
use super::group::{group_alive, kill_group, signal_group};
use crate::pipeline::Stream;

/// Chunks in flight between the task and the engine: enough to keep both busy, few enough that
/// a slow engine slows the agent (its pipe fills) instead of growing memory.
const IN_FLIGHT: usize = 16;
/// After the direct child exits, how long grandchildren may keep the pipes open before the
/// rest of the group is killed (nextest's `detect_fd_leaks` idea).
const LEAK_WAIT: Duration = Duration::from_millis(300);
/// After the final SIGKILL, how long to read what is still buffered in the pipes.
const FINAL_DRAIN: Duration = Duration::from_millis(100);
/// After a small read, how long to let output gather before the next: an agent printing a line
/// every few milliseconds then costs one wake-up per batch, not one per line (a wake-up costs
/// far more than a line); see [`Pipe`]. Lines reach the log and the terminal at most this late
/// (they are stamped when read); timeouts are minutes, unaffected. Part of a dashboard's line →
/// browser time (docs/performance.md, "Dashboard"), so no longer than it must be.
const GATHER: Duration = Duration::from_millis(50);

/// What the task reports.
#[derive(Debug)]
pub enum ProcessEvent {
    /// A chunk of output (chunk boundaries are arbitrary).
    Output(Stream, Vec<u8>),
    /// The agent reached one of its limits (memory, processes) and was killed; the words say
    /// which, and who (`memory limit 2 GiB reached by node (pid 1234)`). Its exit follows.
    LimitReached(String),
    /// The child was reaped and nothing of its group is left; no event follows.
    Exited {
        /// The exit code, when it exited normally.
        code: Option<i32>,
        /// The signal that ended it, when one did.
        signal: Option<i32>,
    },
}

/// What the task can be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// SIGTERM to the group now, SIGKILL after the grace period if it is still there.
    Stop(Duration),
    /// SIGKILL to the group now.
    Kill,
}

/// The engine's side of a supervised process.
#[derive(Debug)]
pub struct Supervised {
    /// What happened, in order; closes after [`ProcessEvent::Exited`].
    pub events: mpsc::Receiver<ProcessEvent>,
    control: mpsc::UnboundedSender<Control>,
    /// Writes to the process's stdin when it was kept open ([`super::StdinMode::Open`]);
    /// dropping it closes stdin.
    input: Option<mpsc::UnboundedSender<Vec<u8>>>,
    spent: Pool,
    task: JoinHandle<()>,
}

impl Supervised {
    /// Sends a control message; a task that already finished ignores it.
    pub fn control(&self, c: Control) {
        let _ = self.control.send(c);
    }

    /// Writes `bytes` to the process's stdin, in order with earlier writes. Returns false when
    /// stdin is not open (never was, was closed, or the process stopped reading).
    pub fn input(&self, bytes: Vec<u8>) -> bool {
        self.input.as_ref().is_some_and(|tx| tx.send(bytes).is_ok())
    }

    /// Closes the process's stdin once what was written before reached it: a protocol's "no
    /// more requests" (Claude exits when its input ends).
    pub fn close_input(&mut self) {
        self.input = None;
    }

    /// Gives the buffer of a processed [`ProcessEvent::Output`] back for the next read, so
    /// streaming output reuses a few buffers instead of allocating one per chunk. Optional.
    pub fn recycle(&self, buf: Vec<u8>) {
        let mut pool = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < IN_FLIGHT {
            pool.push(buf);
        }
    }
}

impl Drop for Supervised {
    /// The task owns the child; aborting it drops the [`Running`] handle, which kills the
    /// whole group. Nothing outlives the handle.
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Running {
    /// Hands the process to a task of the current tokio runtime and returns its handle.
    pub fn supervise(mut self) -> Supervised {
        let input = self.stdin.take().map(|stdin| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(write_input(stdin, rx));
            tx
        });
        let (tx, events) = mpsc::channel(IN_FLIGHT);
        let (control, rx) = mpsc::unbounded_channel();
        let spent = Pool::default();
        let out = Out {
            tx,
            buffers: spent.clone(),
        };
        let task = tokio::spawn(supervise(self, out, rx));
        Supervised {
            events,
            control,
            input,
            spent,
            task,
        }
    }
}

/// Writes what the engine sends to the process's stdin until the engine closes it (drops the
/// sender) or the process stops reading; then stdin is closed, which the process sees as EOF.
async fn write_input(
    mut stdin: tokio::process::ChildStdin,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    use tokio::io::AsyncWriteExt;
    while let Some(bytes) = rx.recv().await {
        if let Err(e) = stdin.write_all(&bytes).await {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                tracing::debug!(error = %e, "could not write to the agent's stdin");
            }
            return;
        }
        let _ = stdin.flush().await;
    }
}

/// Output buffers the engine is done with.
type Pool = std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>;

/// Where output goes: the events, and the buffers coming back from the engine.
struct Out {
    tx: mpsc::Sender<ProcessEvent>,
    buffers: Pool,
}

async fn supervise(
    mut running: Running,
    out: Out,
    mut control: mpsc::UnboundedReceiver<Control>,
) {
    let pgid = running.identity.pgid;
    let mut killer = Killer {
        pgid,
        reaper: running.reaper.then_some(running.identity.pid),
    };
    let mut stdout = Pipe::new(running.stdout.take().map(|p| p.into_owned_fd()));
    let mut stderr = Pipe::new(running.stderr.take().map(|p| p.into_owned_fd()));
    let mut kill_at: Option<Instant> = None;
    let mut control_open = true;
    // Owned here (dropped when the task ends: what is left in its cgroup goes with it), so
    // its wait can sit beside the child's.
    let limits = std::mem::replace(&mut running.limits, crate::sandbox::limits::Enforcer::None);
    let mut limited = !matches!(limits, crate::sandbox::limits::Enforcer::None);
    let status = loop {
        tokio::select! {
            status = running.child.wait() => break status,
            exceeded = limits.exceeded(), if limited => {
                limited = false;
                limits.kill_all();
                killer.kill(&mut kill_at);
                let _ = out.tx.send(ProcessEvent::LimitReached(exceeded.to_string())).await;
            }
            read = stdout.next(GATHER), if stdout.is_open() => {
                forward(Stream::Stdout, read, &stdout, &out).await;
            }
            read = stderr.next(GATHER), if stderr.is_open() => {
                forward(Stream::Stderr, read, &stderr, &out).await;
            }
            c = control.recv(), if control_open => match c {
                Some(c) => apply(c, &mut killer, &mut kill_at),
                None => control_open = false,
            },
            _ = sleep_until(kill_at.unwrap_or_else(Instant::now)), if kill_at.is_some() => {
                killer.kill(&mut kill_at);
            }
        }
    };
    let status = status
        .inspect_err(|e| tracing::warn!(pgid, error = %e, "could not wait for the agent"))
        .ok();
    // The kernel may have killed it for its limit before the watch looked: said before its
    // exit, as when the watch saw it first.
    if limited && let Some(words) = limits.outcome().reason() {
        let _ = out.tx.send(ProcessEvent::LimitReached(words)).await;
    }
    // Grandchildren that still hold the pipes get a moment (or the rest of a graceful stop's
    // grace period) to finish writing; then the group goes.
    let mut until = Instant::now() + LEAK_WAIT;
    if let Some(k) = kill_at {
        until = until.max(k);
    }
    drain(&mut stdout, &mut stderr, until, &out, Some(&mut control)).await;
    if group_alive(pgid) {
        tracing::debug!(
            pgid,
            "killing processes left in the group after the agent exited"
        );
        kill_group(pgid);
    }
    drain(&mut stdout, &mut stderr, Instant::now() + FINAL_DRAIN, &out, None).await;
    // What left the group (setsid, a double fork) is found by the session's mark.
    super::sweep(&running.session_id);
    running.reaped = true;
    let _ = out
        .tx
        .send(ProcessEvent::Exited {
            code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
        })
        .await;
}

/// Carries out a control message.
fn apply(c: Control, killer: &mut Killer, kill_at: &mut Option<Instant>) {
    match c {
        Control::Stop(grace) => {
            signal_group(killer.pgid, Signal::SIGTERM);
            let at = Instant::now() + grace;
            *kill_at = Some(kill_at.map_or(at, |k| k.min(at)));
        }
        Control::Kill => killer.kill(kill_at),
    }
}

/// How long the reaper gets to clear the agent's tree before the group is SIGKILLed.
const REAPER_WAIT: Duration = Duration::from_secs(1);

/// The hard kill: the reaper first (it reaches what left the group; a group SIGKILL would
/// kill the reaper too), the group SIGKILL if it is still there [`REAPER_WAIT`] later.
struct Killer {
    pgid: i32,
    /// The reaper's pid, until it has been asked.
    reaper: Option<i32>,
}

impl Killer {
    fn kill(&mut self, kill_at: &mut Option<Instant>) {
        match self.reaper.take() {
            #[cfg(target_os = "linux")]
            Some(pid) => {
                super::shim::request_kill(pid);
                *kill_at = Some(Instant::now() + REAPER_WAIT);
            }
            _ => {
                signal_group(self.pgid, Signal::SIGKILL);
                *kill_at = None;
            }
        }
    }
}

/// Passes a chunk on; an error is logged (the pipe is closed either way).
async fn forward(
    stream: Stream,
    read: std::io::Result<usize>,
    pipe: &Pipe,
    out: &Out,
) {
    match read {
        Ok(0) => {}
        Ok(n) => {
            let spare = out.buffers.lock().ok().and_then(|mut pool| pool.pop());
            let mut buf = spare.unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(pipe.chunk(n));
            // A closed receiver means the engine is gone; the task ends when it is aborted.
            let _ = out.tx.send(ProcessEvent::Output(stream, buf)).await;
        }
        Err(e) => {
            tracing::warn!(stream = stream.as_str(), error = %e, "could not read agent output");
        }
    }
}

/// Reads both pipes (without gathering: the process is gone) until they close or `until`;
/// control messages still apply (a kill cuts the wait short).
async fn drain(
    stdout: &mut Pipe,
    stderr: &mut Pipe,
    until: Instant,
    out: &Out,
    mut control: Option<&mut mpsc::UnboundedReceiver<Control>>,
) {
    while stdout.is_open() || stderr.is_open() {
        tokio::select! {
            read = stdout.next(Duration::ZERO), if stdout.is_open() => {
                forward(Stream::Stdout, read, stdout, out).await;
            }
            read = stderr.next(Duration::ZERO), if stderr.is_open() => {
                forward(Stream::Stderr, read, stderr, out).await;
            }
            _ = sleep_until(until) => return,
            c = recv(&mut control) => match c {
                Some(Control::Kill) => return,
                Some(Control::Stop(_)) => {}
                None => control = None,
            },
        }
    }
}

/// The next control message; `None` once closed; pending forever without a receiver.
async fn recv(rx: &mut Option<&mut mpsc::UnboundedReceiver<Control>>) -> Option<Control> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
