//! A started agent process: its identity, its pipes, and the guarantee that its whole group
//! dies with the handle.

use std::time::Duration;

use process_wrap::tokio::ChildWrapper;
use tokio::process::{ChildStderr, ChildStdout};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::group::kill_group;
use super::{ProcessIdentity, RunOutcome};

/// A running agent process group, returned by [`Invocation::spawn`](super::Invocation::spawn).
/// Call [`drive`](Running::drive) to run it to the end; dropping it first SIGKILLs the group.
#[derive(Debug)]
pub struct Running {
    pub(super) child: Box<dyn ChildWrapper>,
    pub(super) identity: ProcessIdentity,
    pub(super) stdout: Option<ChildStdout>,
    pub(super) stderr: Option<ChildStderr>,
    pub(super) stdin_task: Option<JoinHandle<()>>,
    pub(super) started: Instant,
    pub(super) inactivity_timeout: Duration,
    pub(super) wall_timeout: Option<Duration>,
    pub(super) grace: Duration,
    /// Set once `drive` has reaped the child and cleared its group. Drop then has nothing to
    /// kill, and a second `drive` returns this instead of signalling a pgid that may since
    /// have been reused.
    pub(super) outcome: Option<RunOutcome>,
}

impl Running {
    /// pid, pgid and (on Linux) start time, to persist while the process runs so a later
    /// oneshot can [`fence`](super::fence) it.
    pub fn identity(&self) -> ProcessIdentity {
        self.identity
    }

    /// When the process was started.
    pub fn started(&self) -> Instant {
        self.started
    }
}

impl Drop for Running {
    /// process-wrap's `KillOnDrop` only makes tokio SIGKILL the direct child; grandchildren
    /// would survive in the group, so the whole group is killed here.
    fn drop(&mut self) {
        if let Some(task) = self.stdin_task.take() {
            task.abort();
        }
        if self.outcome.is_none() {
            kill_group(self.identity.pgid);
        }
    }
}
