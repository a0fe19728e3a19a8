//! The decisions and transitions of a recorded session, typed.

use crate::executor::Evidence;
use crate::machine::SessionState;
use crate::policy::{GuardOutcome, HookCtx, SalvageDecision, VerdictDecision};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// The policy hook a decision record names (`"hook"` in the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hook {
    /// `verdict(output, ctx)`: the auditor's judgement.
    Verdict,
    /// `salvage(evidence, ctx)`: what a stopped worker left.
    Salvage,
    /// `guards["FROM -> TO"](ctx)`: may the transition happen.
    Guard,
    /// `next_prompt(ctx)`: the worker's prompt for the next iteration.
    NextPrompt,
    /// `audit_prompt(ctx)`: the auditor's prompt.
    AuditPrompt,
    /// `on_transition(from, to, ctx)`: the observer.
    OnTransition,
}

impl Hook {
    /// Every hook, in the order `docs/log-format.md` lists them.
    pub const ALL: [Hook; 6] = [
        Hook::Verdict,
        Hook::Salvage,
        Hook::Guard,
        Hook::NextPrompt,
        Hook::AuditPrompt,
        Hook::OnTransition,
    ];

    /// The name used in the log (`"next_prompt"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Hook::Verdict => "verdict",
            Hook::Salvage => "salvage",
            Hook::Guard => "guard",
            Hook::NextPrompt => "next_prompt",
            Hook::AuditPrompt => "audit_prompt",
            Hook::OnTransition => "on_transition",
        }
    }

    /// The hook with this log name.
    pub fn from_name(name: &str) -> Option<Hook> {
        Hook::ALL.into_iter().find(|h| h.as_str() == name)
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a hook was given, with `$blob` references already replaced by their text.
///
/// The ctx is shared: equal recorded contexts are loaded once, so consecutive decisions hand the
/// policy the same object and memory stays proportional to the distinct contexts.
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionInput {
    /// `verdict`: the auditor's output tail as the hook saw it.
    Verdict {
        /// The output.
        output: String,
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `salvage`: the recovery evidence.
    Salvage {
        /// The evidence.
        evidence: Evidence,
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `guard`: the transition asked about.
    Guard {
        /// The state the transition leaves.
        from: SessionState,
        /// The state it enters.
        to: SessionState,
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `next_prompt`.
    NextPrompt {
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `audit_prompt`.
    AuditPrompt {
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `on_transition`: the transition that happened.
    OnTransition {
        /// The state left.
        from: SessionState,
        /// The state entered.
        to: SessionState,
        /// The context.
        ctx: Arc<HookCtx>,
    },
}

impl DecisionInput {
    /// The context the hook saw.
    pub fn ctx(&self) -> &Arc<HookCtx> {
        match self {
            DecisionInput::Verdict { ctx, .. }
            | DecisionInput::Salvage { ctx, .. }
            | DecisionInput::Guard { ctx, .. }
            | DecisionInput::NextPrompt { ctx }
            | DecisionInput::AuditPrompt { ctx }
            | DecisionInput::OnTransition { ctx, .. } => ctx,
        }
    }

    /// The hook this input belongs to.
    pub fn hook(&self) -> Hook {
        match self {
            DecisionInput::Verdict { .. } => Hook::Verdict,
            DecisionInput::Salvage { .. } => Hook::Salvage,
            DecisionInput::Guard { .. } => Hook::Guard,
            DecisionInput::NextPrompt { .. } => Hook::NextPrompt,
            DecisionInput::AuditPrompt { .. } => Hook::AuditPrompt,
            DecisionInput::OnTransition { .. } => Hook::OnTransition,
        }
    }
}

/// What a hook answered (or the built-in default standing in for it).
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionResult {
    /// `verdict`.
    Verdict(VerdictDecision),
    /// `salvage`.
    Salvage(SalvageDecision),
    /// `guard`.
    Guard(GuardOutcome),
    /// `next_prompt` or `audit_prompt`.
    Prompt(String),
    /// `on_transition` returned (its values are ignored).
    Observed,
    /// The hook failed; the engine sent the session to its fallback (or, for an observer on a
    /// terminal state, only warned).
    Error {
        /// The message, with `file:line` where Lua knew it.
        message: String,
        /// `budget`, `memory`, `runtime`, `sandbox`, `bad_return`, `load` or `read`.
        kind: String,
    },
}

impl DecisionResult {
    /// The hook failed.
    pub fn is_error(&self) -> bool {
        matches!(self, DecisionResult::Error { .. })
    }
}

/// One `decision` record of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedDecision {
    /// Position among the log's decisions, from 0.
    pub index: usize,
    /// Position among all records of the log, from 1 (the line number when no line was
    /// skipped); orders decisions against transitions.
    pub record: usize,
    /// The hook asked.
    pub hook: Hook,
    /// The session state when it was asked (for a guard: the `from` state).
    pub state: SessionState,
    /// The worker iteration.
    pub iteration: u32,
    /// The policy generation that answered.
    pub generation: u32,
    /// The content hash of the policy that answered.
    pub policy_hash: String,
    /// The built-in default answered because the policy had no such hook.
    pub builtin: bool,
    /// What the hook was given.
    pub input: DecisionInput,
    /// What it answered.
    pub result: DecisionResult,
    /// `$blob` references whose `blob` record is not in the log; their text reads as empty, so
    /// the decision cannot be replayed faithfully.
    pub missing_blobs: Vec<String>,
}

impl RecordedDecision {
    /// Every blob it references was found.
    pub fn is_complete(&self) -> bool {
        self.missing_blobs.is_empty()
    }
}

/// One `state_change` record of the log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedTransition {
    /// Position among all records of the log, from 1.
    pub record: usize,
    /// The state left.
    pub from: SessionState,
    /// The state entered.
    pub to: SessionState,
    /// The worker iteration after the transition.
    pub iteration: u32,
    /// Why (e.g. `max_iterations`, `policy_error`, a verdict's reason).
    pub reason: Option<String>,
    /// More detail, when the engine gave any.
    pub detail: Option<String>,
    /// The policy hash that was active, when recorded.
    pub policy_hash: Option<String>,
    /// The policy generation that was active, when recorded.
    pub generation: Option<u32>,
}

/// Everything replay needs from a log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recorded {
    /// The decisions, in log order.
    pub decisions: Vec<RecordedDecision>,
    /// The transitions, in log order.
    pub transitions: Vec<RecordedTransition>,
    /// The state the last transition entered (`None` before the first).
    pub final_state: Option<SessionState>,
}

impl Recorded {
    /// The states the session went through: the first transition's `from`, then every `to`.
    pub fn path(&self) -> Vec<SessionState> {
        let mut path = Vec::with_capacity(self.transitions.len() + 1);
        if let Some(first) = self.transitions.first() {
            path.push(first.from);
        }
        path.extend(self.transitions.iter().map(|t| t.to));
        path
    }
}
