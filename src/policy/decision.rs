//! The typed answers hooks give, and the built-in salvage rule.

use crate::executor::Evidence;
use crate::machine::{Salvage, Verdict};

/// What the `verdict` hook (or the built-in parser) concluded from the auditor's output.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictDecision {
    /// Done, retry or impossible.
    pub verdict: Verdict,
    /// The auditor's reason; for `retry` this becomes the critique in the next prompt.
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
