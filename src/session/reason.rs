//! Why a transition happened, as data. Rendered to text only at the edge: [`Reason::code`] is
//! the stable word a policy reads as `ctx.reason`, [`fmt::Display`] the sentence a person reads.

use crate::machine::{Salvage, SessionState, Verdict};
use crate::process::{Role, StopReason};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The cause recorded with a transition (history entry, `state_change` record, outcome).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reason {
    /// The process exited non-zero, or a signal nobody here sent ended it.
    Exited {
        /// Worker or auditor.
        role: Role,
        /// Its exit code, when it exited normally.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        /// The signal that ended it, when one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    /// The process could not be started.
    SpawnFailed {
        /// Worker or auditor.
        role: Role,
        /// What the operating system said.
        error: String,
    },
    /// oneshot stopped the process: no output for the inactivity timeout, or its wall-clock
    /// timeout ran out.
    TimedOut {
        /// Worker or auditor.
        role: Role,
        /// [`StopReason::InactivityTimeout`] or [`StopReason::WorkerTimeout`].
        why: StopReason,
    },
    /// The user stopped the process (Ctrl-C, SIGTERM, an embedder's interrupt handle).
    Interrupted {
        /// Worker or auditor.
        role: Role,
    },
    /// oneshot itself died while the process ran; found when the session was resumed.
    OneshotDied {
        /// Worker or auditor.
        role: Role,
    },
    /// The auditor's verdict.
    Verdict {
        /// Done, retry or impossible.
        verdict: Verdict,
        /// The auditor's reason (for a retry, the critique).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A check of the audit failed: a RETRY made without asking the auditor (the critique, in
    /// the verdict, is each failed check's status and output).
    ChecksFailed {
        /// Each failed check, `name (status)`.
        checks: Vec<String>,
    },
    /// The auditor's answers held no verdict, however often it was asked (the first answer and
    /// `limits.verdict_reasks` more).
    NoVerdict {
        /// How many answers it gave.
        answers: u32,
        /// What the last one lacked (the policy's reason, or the built-in reader's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// What the salvage decision made of a stopped worker's leftovers.
    Salvaged {
        /// Success, partial or nothing.
        salvage: Salvage,
        /// The policy's reason, when it gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A paused worker's iteration runs again without spending one.
    Rerun,
    /// An interrupted session was resumed.
    Resumed {
        /// What had stopped it ([`StopReason::Interrupted`] or [`StopReason::OneshotDied`]).
        after: StopReason,
    },
    /// The iteration budget is spent.
    MaxIterations {
        /// The budget.
        max: u32,
    },
    /// A guard refused the transition.
    GuardVeto {
        /// The state the transition would have left.
        from: SessionState,
        /// The state it would have entered.
        to: SessionState,
        /// The guard's reason.
        why: String,
    },
    /// A hook failed (error, budget, memory, bad return) and fails closed.
    PolicyError {
        /// The hook (`verdict`, `guards[A -> B]`, …).
        hook: String,
        /// `runtime`, `budget`, `memory`, `sandbox`, `bad_return`, …
        error_kind: String,
        /// The message, with `file:line` where Lua knew it.
        message: String,
    },
    /// The user interrupted a policy hook while it ran (Ctrl-C): the session pauses, and a
    /// resume asks the hook again.
    HookInterrupted {
        /// The hook cut short (`verdict`, `guards[A -> B]`, …).
        hook: String,
    },
    /// A session that failed by a policy error was resumed under another policy, or one whose
    /// hook the user interrupted was resumed: back where the hook was asked, to ask it again.
    Retake {
        /// The hook asked again.
        hook: String,
        /// The content hash of the policy that answers now.
        policy: String,
    },
    /// The agent reported a failure oneshot does not retry: refused credentials, or a
    /// provider error that outlasted the retries.
    AgentFailed {
        /// Worker or auditor.
        role: Role,
        /// The failure.
        #[serde(flatten)]
        failure: super::AgentFailure,
    },
    /// The agents used up a budget of the policy's `limits.budget`.
    BudgetExceeded {
        /// `turns`, `tokens` or `usd`.
        resource: String,
        /// How much was used.
        used: f64,
        /// The budget.
        limit: f64,
    },
    /// oneshot could not go on for a reason of its own: a bug, reported rather than hidden.
    Internal {
        /// What went wrong.
        message: String,
    },
}

impl Reason {
    /// The stable word a policy sees as `ctx.reason` (documented in `docs/policy.md`).
    pub fn code(&self) -> &'static str {
        match self {
            Reason::Exited {
                role: Role::Worker, ..
            } => "exit_code",
            Reason::Exited {
                role: Role::Auditor,
                ..
            } => "auditor_failed",
            Reason::SpawnFailed { .. } => "spawn_failed",
            Reason::TimedOut { role, why } => match (role, why) {
                (Role::Auditor, StopReason::InactivityTimeout) => "auditor_inactivity_timeout",
                (Role::Auditor, _) => "auditor_timeout",
                (Role::Worker, why) => why.as_str(),
            },
            Reason::Interrupted { .. } => "interrupted",
            Reason::OneshotDied { .. } => "oneshot_died",
            Reason::Verdict { verdict, .. } => match verdict {
                Verdict::Done => "done",
                Verdict::Retry => "retry",
                Verdict::Impossible => "impossible",
            },
            Reason::NoVerdict { .. } => "no_verdict",
            Reason::ChecksFailed { .. } => "checks_failed",
            Reason::Salvaged { salvage, .. } => match salvage {
                Salvage::Success => "salvage_success",
                Salvage::Partial => "salvage_partial",
                Salvage::Nothing => "salvage_nothing",
            },
            Reason::Rerun => "rerun",
            Reason::Resumed { .. } => "resumed",
            Reason::MaxIterations { .. } => "max_iterations",
            Reason::GuardVeto { .. } => "guard_veto",
            Reason::PolicyError { .. } => "policy_error",
            Reason::Retake { .. } => "retake",
            Reason::HookInterrupted { .. } => "hook_interrupted",
            Reason::AgentFailed { failure, .. } if failure.is_auth() => "agent_auth_failed",
            Reason::AgentFailed { .. } => "agent_failed",
            Reason::BudgetExceeded { .. } => "budget_exceeded",
            Reason::Internal { .. } => "internal_error",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Exited { role, code, signal } => match (code, signal) {
                (Some(code), _) => write!(f, "the {role} exited with code {code}"),
                (None, Some(sig)) => write!(f, "the {role} was killed by signal {sig}"),
                (None, None) => write!(f, "the {role} ended without an exit status"),
            },
            Reason::SpawnFailed { role, error } => write!(f, "the {role} could not start: {error}"),
            Reason::TimedOut { role, why } => match why {
                StopReason::InactivityTimeout => {
                    write!(f, "the {role} printed nothing for the inactivity timeout")
                }
                StopReason::LimitReached => {
                    write!(f, "the {role} reached its memory or process limit")
                }
                _ => write!(f, "the {role} ran past its wall-clock timeout"),
            },
            Reason::Interrupted { role } => write!(f, "the {role} was interrupted"),
            Reason::OneshotDied { role } => {
                write!(f, "oneshot stopped while the {role} ran (found on resume)")
            }
            Reason::Verdict { reason, .. } => {
                f.write_str(self.code())?;
                match reason {
                    Some(r) => write!(f, ": {r}"),
                    None => Ok(()),
                }
            }
            Reason::ChecksFailed { checks } => write!(f, "checks failed: {}", checks.join(", ")),
            Reason::NoVerdict { answers, reason } => {
                let times = if *answers == 1 {
                    "its answer".to_string()
                } else {
                    format!("{answers} answers")
                };
                write!(f, "the auditor gave no verdict in {times}")?;
                match reason {
                    Some(r) => write!(f, ": {r}"),
                    None => Ok(()),
                }
            }
            Reason::Salvaged { salvage, reason } => {
                let word = match salvage {
                    Salvage::Success => "success",
                    Salvage::Partial => "partial",
                    Salvage::Nothing => "nothing",
                };
                write!(f, "salvage {word}")?;
                match reason {
                    Some(r) => write!(f, ": {r}"),
                    None => Ok(()),
                }
            }
            Reason::Rerun => f.write_str("the paused iteration runs again"),
            Reason::Resumed { after } => write!(f, "resumed after {after}"),
            Reason::MaxIterations { max } => {
                write!(f, "{max} of {max} iterations used without a DONE verdict")
            }
            Reason::GuardVeto { from, to, why } => write!(f, "guard {from} -> {to} vetoed: {why}"),
            Reason::PolicyError { message, .. } => write!(f, "policy error: {message}"),
            Reason::Retake { hook, policy } => {
                write!(f, "resumed under policy {policy}: asking {hook} again")
            }
            Reason::HookInterrupted { hook } => write!(
                f,
                "hook {hook} was interrupted while it ran; a resume asks it again"
            ),
            Reason::AgentFailed { role, failure } => {
                let agent = failure.agent;
                let status = failure
                    .status
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default();
                if failure.is_auth() {
                    write!(
                        f,
                        "the {role} ({agent}) was refused by its provider{status}: {}; {}",
                        failure.message,
                        agent.auth_hint()
                    )
                } else {
                    write!(
                        f,
                        "the {role} ({agent}) failed{status}: {}",
                        failure.message
                    )
                }
            }
            Reason::BudgetExceeded {
                resource,
                used,
                limit,
            } => write!(
                f,
                "the {resource} budget is spent: {used} used of {limit} (limits.budget)"
            ),
            Reason::Internal { message } => write!(f, "internal error: {message}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_words() {
        let cases = [
            (
                Reason::TimedOut {
                    role: Role::Worker,
                    why: StopReason::InactivityTimeout,
                },
                "inactivity_timeout",
            ),
            (
                Reason::TimedOut {
                    role: Role::Auditor,
                    why: StopReason::WorkerTimeout,
                },
                "auditor_timeout",
            ),
            (Reason::MaxIterations { max: 3 }, "max_iterations"),
            (
                Reason::Exited {
                    role: Role::Auditor,
                    code: Some(2),
                    signal: None,
                },
                "auditor_failed",
            ),
        ];
        for (reason, code) in cases {
            assert_eq!(reason.code(), code, "{reason:?}");
        }
    }

    /// One reason of every kind (the match below fails to compile when a kind is added).
    fn one_of_each() -> Vec<Reason> {
        let w = Role::Worker;
        let all = vec![
            Reason::Exited {
                role: w,
                code: Some(1),
                signal: None,
            },
            Reason::SpawnFailed {
                role: w,
                error: "not found".into(),
            },
            Reason::TimedOut {
                role: w,
                why: StopReason::InactivityTimeout,
            },
            Reason::Interrupted { role: w },
            Reason::OneshotDied { role: w },
            Reason::Verdict {
                verdict: Verdict::Done,
                reason: None,
            },
            Reason::Salvaged {
                salvage: Salvage::Partial,
                reason: None,
            },
            Reason::NoVerdict {
                answers: 3,
                reason: None,
            },
            Reason::Rerun,
            Reason::Resumed {
                after: StopReason::Interrupted,
            },
            Reason::MaxIterations { max: 1 },
            Reason::GuardVeto {
                from: SessionState::Created,
                to: SessionState::WorkerExecuting,
                why: "no".into(),
            },
            Reason::PolicyError {
                hook: "verdict".into(),
                error_kind: "runtime".into(),
                message: "boom".into(),
            },
            Reason::Internal {
                message: "bug".into(),
            },
            Reason::Retake {
                hook: "verdict".into(),
                policy: "sha256:0123".into(),
            },
            Reason::HookInterrupted {
                hook: "verdict".into(),
            },
            Reason::ChecksFailed {
                checks: vec!["tests (exit 1)".into()],
            },
            Reason::BudgetExceeded {
                resource: "usd".into(),
                used: 1.5,
                limit: 1.0,
            },
            Reason::AgentFailed {
                role: Role::Worker,
                failure: crate::session::AgentFailure {
                    agent: crate::agent::AgentKind::Codex,
                    kind: crate::agent::ErrorKind::Server,
                    status: Some(500),
                    message: "unexpected status 500".into(),
                },
            },
        ];
        for r in &all {
            match r {
                Reason::Exited { .. }
                | Reason::SpawnFailed { .. }
                | Reason::TimedOut { .. }
                | Reason::Interrupted { .. }
                | Reason::OneshotDied { .. }
                | Reason::Verdict { .. }
                | Reason::Salvaged { .. }
                | Reason::NoVerdict { .. }
                | Reason::ChecksFailed { .. }
                | Reason::Rerun
                | Reason::Resumed { .. }
                | Reason::MaxIterations { .. }
                | Reason::GuardVeto { .. }
                | Reason::PolicyError { .. }
                | Reason::Retake { .. }
                | Reason::HookInterrupted { .. }
                | Reason::AgentFailed { .. }
                | Reason::BudgetExceeded { .. }
                | Reason::Internal { .. } => {}
            }
        }
        all
    }

    /// docs/policy.md's `ctx.reason` table names every word a policy can see.
    #[test]
    fn every_code_is_in_the_policy_reference() {
        let doc = include_str!("../../docs/policy.md");
        let table = &doc[doc.find("| `ctx.reason` |").expect("the ctx.reason table")..];
        let table = &table[..table.find("\n\n").unwrap_or(table.len())];
        let mut codes: Vec<&str> = one_of_each().iter().map(Reason::code).collect();
        // The variants whose word depends on their data.
        codes.extend([
            "auditor_failed",
            "worker_timeout",
            "auditor_inactivity_timeout",
            "auditor_timeout",
            "agent_auth_failed",
            "retry",
            "impossible",
            "salvage_success",
            "salvage_nothing",
        ]);
        for code in codes {
            assert!(
                table.contains(&format!("`{code}`")),
                "docs/policy.md's ctx.reason table lacks `{code}`"
            );
        }
    }

    #[test]
    fn reasons_round_trip_through_json() {
        let r = Reason::GuardVeto {
            from: SessionState::AuditPending,
            to: SessionState::AuditorExecuting,
            why: "too early".into(),
        };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"guard_veto","from":"AUDIT_PENDING","to":"AUDITOR_EXECUTING","why":"too early"}"#
        );
        assert_eq!(serde_json::from_str::<Reason>(&json).unwrap(), r);
        assert_eq!(
            r.to_string(),
            "guard AUDIT_PENDING -> AUDITOR_EXECUTING vetoed: too early"
        );
    }
}
