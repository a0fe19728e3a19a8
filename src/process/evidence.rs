//! What `recover()` found after a worker stopped without a clean exit: the facts the policy's
//! `salvage` hook (or the built-in rule) judges.

use serde::{Deserialize, Serialize};

/// Why a process stopped. Recorded as the `reason` of the RECOVERY_PENDING history entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// It exited on its own with a non-zero code (or was killed by a signal nobody sent).
    ExitCode,
    /// No output on stdout or stderr for the inactivity timeout; oneshot killed its group.
    InactivityTimeout,
    /// The role's wall-clock timeout ran out; oneshot killed its group.
    WorkerTimeout,
    /// The user pressed Ctrl-C or sent SIGTERM.
    Interrupted,
    /// oneshot itself died (kill -9, crash, power loss) while the process ran.
    OneshotDied,
    /// The agent's run, still going, spent the policy's `limits.budget`; oneshot stopped it.
    BudgetExceeded,
    /// The agent reached its memory or process limit (`limits.memory`, `limits.pids`) and was
    /// killed.
    LimitReached,
}

impl StopReason {
    /// The snake_case name used in state files, logs and `ctx.reason`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::ExitCode => "exit_code",
            StopReason::InactivityTimeout => "inactivity_timeout",
            StopReason::WorkerTimeout => "worker_timeout",
            StopReason::Interrupted => "interrupted",
            StopReason::OneshotDied => "oneshot_died",
            StopReason::BudgetExceeded => "budget_exceeded",
            StopReason::LimitReached => "limit_reached",
        }
    }

    /// The stop was not the worker's doing: a paused session must never fail for having been
    /// paused, so built-in salvage treats these as `partial` and runs the worker again.
    pub const fn is_pause(self) -> bool {
        matches!(self, StopReason::Interrupted | StopReason::OneshotDied)
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Evidence about a stopped worker, handed to `salvage(evidence, ctx)` as a Lua table with the
/// same field names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Why it stopped; `None` only for evidence built by hand.
    pub reason: Option<StopReason>,
    /// Exit code, when it exited.
    pub exit_code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub signal: Option<i32>,
    /// The last bytes of its combined output, redacted.
    pub output_tail: String,
    /// Workdir-relative paths that changed during the run (after the ignore globs).
    pub changed_files: Vec<String>,
    /// How the change list was obtained: `"git"` or `"snapshot"`.
    pub changes_source: String,
    /// What the agent's own transcript says it did (an agent worker whose transcript oneshot
    /// can read: Claude Code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<Box<TranscriptFacts>>,
}

/// The facts recovery reads from an agent's own transcript: the real last thing it said, what
/// its tools returned, and the files its tools wrote — which its output tail may have lost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TranscriptFacts {
    /// The transcript file.
    pub path: String,
    /// The agent's last assistant text (redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message: Option<String>,
    /// How many tool results the transcript holds.
    pub tool_results: u32,
    /// Files its tools wrote or edited (`file_path` of Write, Edit, MultiEdit, NotebookEdit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}
