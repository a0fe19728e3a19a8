//! The typed answers hooks give, and the built-in salvage rule.

use crate::machine::{Salvage, Verdict};
use crate::process::{Evidence, Role};

/// What the `verdict` hook (or the built-in parser) concluded from the auditor's output.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictDecision {
    /// Done, retry or impossible; `None` when the auditor's answer held no verdict at all
    /// (the hook answered `"none"`): the auditor is asked again, within `limits.verdict_reasks`,
    /// and no worker iteration is spent on it.
    pub verdict: Option<Verdict>,
    /// The auditor's reason; for `retry` this becomes the critique in the next prompt; for no
    /// verdict, what was missing (the note the auditor is asked again with).
    pub reason: Option<String>,
    /// The auditor's confidence in `[0, 1]`, when it gave one.
    pub confidence: Option<f64>,
}

/// What the `salvage` hook (or the built-in rule) concluded about a stopped worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SalvageDecision {
    /// Success, partial or nothing.
    pub salvage: Salvage,
    /// Why, for the history entry.
    pub reason: Option<String>,
}

/// A guard's answer. A veto sends the session to its fallback with the reason recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardOutcome {
    /// The transition may happen (also the answer when no guard is registered).
    Allow,
    /// The policy refuses the transition, for this reason.
    Veto(String),
}

/// The built-in salvage rule: keep the work when files changed, and never fail a session for
/// having been paused (interrupted, or oneshot itself died); otherwise there is nothing to keep.
pub fn default_salvage(evidence: &Evidence) -> SalvageDecision {
    let paused = evidence.reason.is_some_and(|r| r.is_pause());
    let (salvage, reason) = if !evidence.changed_files.is_empty() {
        (
            Salvage::Partial,
            format!("{} file(s) changed", evidence.changed_files.len()),
        )
    } else if paused {
        (Salvage::Partial, "the worker was paused, not failed".into())
    } else {
        (Salvage::Nothing, "no files changed".into())
    };
    SalvageDecision {
        salvage,
        reason: Some(reason),
    }
}

/// The answer to a tool-permission request (Claude Code's `can_use_tool`, a Codex approval
/// request, an ACP permission request): the `permit` hook's, or the built-in
/// rule's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermitDecision {
    /// Whether the agent may use the tool.
    pub allow: bool,
    /// Why, when the hook (or the built-in rule) gave a reason; the agent is shown it on a deny.
    pub reason: Option<String>,
}

impl PermitDecision {
    /// Permission granted, no reason given.
    pub fn allow() -> PermitDecision {
        PermitDecision {
            allow: true,
            reason: None,
        }
    }

    /// Permission refused for `reason`.
    pub fn deny(reason: impl Into<String>) -> PermitDecision {
        PermitDecision {
            allow: false,
            reason: Some(reason.into()),
        }
    }
}

/// The tools that change files, by the names Claude Code, Gemini CLI and Codex give them, and
/// the Agent Client Protocol's kinds for them (an ACP agent whose tool has no name of its own).
pub const FILE_EDIT_TOOLS: [&str; 11] = [
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "write_file",
    "replace",
    "apply_patch",
    "file_change",
    "edit",
    "delete",
    "move",
];

/// Why [`default_permit`] refuses the auditor a file-editing tool.
pub const AUDITOR_EDIT_REASON: &str = "the auditor judges the work; it does not change files";

/// The built-in permission rule, used when the policy has no `permit` hook: the worker may use
/// every tool (it runs in its own workdir, which is what the session is for); the auditor may
/// use every tool except the file-editing ones ([`FILE_EDIT_TOOLS`]), so judging the work can
/// never change it.
pub fn default_permit(role: Role, tool: &str) -> PermitDecision {
    match role {
        Role::Auditor if FILE_EDIT_TOOLS.contains(&tool) => {
            PermitDecision::deny(AUDITOR_EDIT_REASON)
        }
        _ => PermitDecision::allow(),
    }
}
