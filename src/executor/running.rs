//! A started agent process: its identity, its pipes, and the guarantee that its whole group
//! dies with the handle.

use process_wrap::tokio::ChildWrapper;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

use super::group::kill_group;

/// How long dropping a handle waits for the reaper to clear the agent's tree.
#[cfg(target_os = "linux")]
const REAPER_WAIT: std::time::Duration = std::time::Duration::from_millis(200);
use super::ProcessIdentity;

/// A running agent process group, returned by [`Invocation::spawn`](super::Invocation::spawn).
/// Hand it to [`supervise`](Running::supervise) to run it to the end; dropping it first
/// SIGKILLs the group.
#[derive(Debug)]
pub struct Running {
    pub(super) child: Box<dyn ChildWrapper>,
    pub(super) identity: ProcessIdentity,
    pub(super) stdout: Option<ChildStdout>,
    pub(super) stderr: Option<ChildStderr>,
    pub(super) stdin_task: Option<JoinHandle<()>>,
    /// stdin kept open for the engine ([`super::StdinMode::Open`]).
    pub(super) stdin: Option<ChildStdin>,
    /// Set once the child was reaped and its group cleared: drop then has nothing to kill, and
    /// must not signal a pgid that may since have been reused.
    pub(super) reaped: bool,
    /// The child is a reaper (`shim.rs`) that kills the agent's whole tree when asked.
    pub(super) reaper: bool,
    /// The session whose mark the process carries (see [`super::sweep`]).
    pub(super) session_id: String,
    /// Its limits' enforcer: dropped with the handle, it kills what is left in the agent's
    /// cgroup and removes it.
    pub(super) limits: crate::sandbox::limits::Enforcer,
    /// The agent's proxy, served as long as the handle lives.
    pub(super) _gateway: Option<crate::sandbox::Served>,
    /// `$ONESHOT_PROMPT_FILE`, removed (as a field, after `drop` below) with the handle.
    pub(super) _prompt_file: super::prompt_file::PromptFile,
}

impl Running {
    /// pid, pgid and (on Linux) start time, to persist while the process runs so a later
    /// oneshot can [`fence`](super::fence) it.
    pub fn identity(&self) -> ProcessIdentity {
        self.identity
    }
}

impl Drop for Running {
    /// process-wrap's `KillOnDrop` only makes tokio SIGKILL the direct child; grandchildren
    /// would survive in the group, so the whole group is killed here.
    fn drop(&mut self) {
        if let Some(task) = self.stdin_task.take() {
            task.abort();
        }
        if !self.reaped {
            #[cfg(target_os = "linux")]
            if self.reaper {
                // The reaper kills what left the group too; give it a moment before the group
                // SIGKILL (which would kill it as well) makes sure.
                super::shim::request_kill(self.identity.pid);
                let until = std::time::Instant::now() + REAPER_WAIT;
                while super::group_alive(self.identity.pgid) && std::time::Instant::now() < until {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
            kill_group(self.identity.pgid);
            super::sweep(&self.session_id);
        }
    }
}
