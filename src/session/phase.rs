//! Where a session is, with the data that only exists there: a running worker has its process
//! and any stop under way; an audit has its prompt; a recovery has its evidence; a pause knows
//! what it interrupted and why. Nothing here is an `Option` that "should be set by now".

use crate::machine::SessionState;
use crate::process::{Evidence, ProcessIdentity, Role, StopReason};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The session's phase: its [`SessionState`] plus that state's own data.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// New; nothing ran yet.
    Created,
    /// The worker runs (or is about to: `process` is `None` until it started).
    WorkerExecuting(Run),
    /// The worker exited 0; the auditor is due.
    AuditPending,
    /// The auditor runs with this prompt.
    AuditorExecuting(AuditRun),
    /// The worker is due again.
    ReiterationPending(Next),
    /// The worker stopped without a clean exit; this is what it left.
    RecoveryPending(Box<Evidence>),
    /// Terminal: done.
    Completed,
    /// Terminal: failed. After a policy error, where the failed hook was asked.
    Failed(Failed),
    /// Terminal: the auditor judged the task impossible.
    Rejected,
    /// Paused; resumable.
    Interrupted(Pause),
}

/// A process of the session, from the moment oneshot decided to start it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The process once it started; journaled so a later oneshot can fence it after a crash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessIdentity>,
    /// Why oneshot is stopping it; journaled before the first signal, so a crash in the middle
    /// of a stop resumes as the stop it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping: Option<StopReason>,
    /// How it ended, once it did (a worker waits here while its leftovers are inspected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exited: Option<ExitStatus>,
    /// The failure the agent reported before it exited, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<super::AgentFailure>,
    /// Which retry of a transient provider failure this run is (0: the first try).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u32,
    /// What the agent has used so far in this run, while it runs (its own report at the end
    /// replaces it): what the budget is checked against mid-run.
    #[serde(default, skip_serializing_if = "super::Spent::is_zero")]
    pub progress: super::Spent,
}

impl Run {
    /// Why the run stopped, read with how it exited: oneshot's own stop, else a failure when it
    /// exited non-zero or its agent reported one — whatever its exit code (Aider exits 0 when
    /// its provider refused every call); `None` for a clean exit.
    pub(crate) fn stop_reason(&self, exit: ExitStatus) -> Option<StopReason> {
        let failed = !exit.success() || self.failure.is_some();
        self.stopping.or(failed.then_some(StopReason::ExitCode))
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How a process ended, as far as the operating system says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitStatus {
    /// The exit code, when it exited normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

impl ExitStatus {
    /// Exited normally with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// The auditor's run and the prompt it was given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditRun {
    /// The prompt (`audit_prompt` hook or the built-in).
    pub prompt: String,
    /// The process.
    #[serde(flatten)]
    pub run: Run,
    /// How many times the auditor was asked again in this iteration because its answer held
    /// no verdict (`limits.verdict_reasks` bounds it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasks: u32,
    /// What its last answer lacked, said to it ahead of the prompt when it is asked again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The audit's checks ran (and passed: a failure ends the audit), so the auditor is next;
    /// the prompt then ends with their results.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checked: bool,
}

impl AuditRun {
    /// What the auditor is given: the prompt, after the note of what its last answer lacked
    /// when it is asked again.
    pub fn full_prompt(&self) -> String {
        match &self.note {
            Some(note) => format!("{note}\n\n{}", self.prompt),
            None => self.prompt.clone(),
        }
    }
}

/// A FAILED session's own data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Failed {
    /// The phase a hook was asked in when its failure (a policy error, and nothing else) ended
    /// the session: a resume under a corrected policy goes back there and asks again, keeping
    /// the work done so far.
    pub retake: Option<Box<Phase>>,
}

/// Which worker run REITERATION_PENDING leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Next {
    /// A new iteration, with the `next_prompt` hook's prompt, if the budget allows.
    Iteration,
    /// The same iteration again with the same prompt: the worker was paused, not failed, and a
    /// pause must not cost an iteration.
    Rerun,
}

/// What an INTERRUPTED session was doing, and why it stopped (seed 000 §3.2 resumes from it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pause {
    /// The process that was running, or the one a hook cut short was deciding about.
    pub during: Role,
    /// [`StopReason::Interrupted`] (the user) or [`StopReason::OneshotDied`] (found on resume).
    pub cause: StopReason,
    /// The phase a hook was running in when the user interrupted it (Ctrl-C): a resume goes
    /// back there and asks it again. Kept in the state file by [`Phase::data`], beside the rest.
    #[serde(skip)]
    pub retake: Option<Box<Phase>>,
}

impl Phase {
    /// FAILED for good: nothing to go back to.
    pub fn failed() -> Phase {
        Phase::Failed(Failed::default())
    }

    /// The phase a hook was asked in, to go back to and ask again: a FAILED that a corrected
    /// policy can take up again, or an INTERRUPTED whose hook the user cut short.
    pub fn retake(&self) -> Option<&Phase> {
        match self {
            Phase::Failed(Failed { retake: Some(p) }) => Some(p),
            Phase::Interrupted(Pause {
                retake: Some(p), ..
            }) => Some(p),
            _ => None,
        }
    }

    /// The state of the seed's table this phase is.
    pub fn state(&self) -> SessionState {
        use SessionState as S;
        match self {
            Phase::Created => S::Created,
            Phase::WorkerExecuting(_) => S::WorkerExecuting,
            Phase::AuditPending => S::AuditPending,
            Phase::AuditorExecuting(_) => S::AuditorExecuting,
            Phase::ReiterationPending(_) => S::ReiterationPending,
            Phase::RecoveryPending(_) => S::RecoveryPending,
            Phase::Completed => S::Completed,
            Phase::Failed(_) => S::Failed,
            Phase::Rejected => S::Rejected,
            Phase::Interrupted(_) => S::Interrupted,
        }
    }

    /// The process of an executing phase.
    pub fn run(&self) -> Option<&Run> {
        match self {
            Phase::WorkerExecuting(run) => Some(run),
            Phase::AuditorExecuting(a) => Some(&a.run),
            _ => None,
        }
    }

    /// The process of an executing phase, to change.
    pub fn run_mut(&mut self) -> Option<&mut Run> {
        match self {
            Phase::WorkerExecuting(run) => Some(run),
            Phase::AuditorExecuting(a) => Some(&mut a.run),
            _ => None,
        }
    }

    /// The role running in an executing phase.
    pub fn role(&self) -> Option<Role> {
        match self {
            Phase::WorkerExecuting(_) => Some(Role::Worker),
            Phase::AuditorExecuting(_) => Some(Role::Auditor),
            _ => None,
        }
    }

    /// The phase's own data as JSON (`null` for states without any), for the state file.
    pub(crate) fn data(&self) -> Value {
        let v = match self {
            Phase::WorkerExecuting(run) => serde_json::to_value(run),
            Phase::AuditorExecuting(a) => serde_json::to_value(a),
            Phase::ReiterationPending(next) => serde_json::to_value(next),
            Phase::RecoveryPending(e) => serde_json::to_value(e),
            Phase::Interrupted(p) => serde_json::to_value(p).map(|mut v| {
                if let (Some(p), Some(obj)) = (&p.retake, v.as_object_mut()) {
                    obj.insert("retake".into(), retake_data(p));
                }
                v
            }),
            Phase::Failed(Failed { retake: Some(p) }) => {
                Ok(serde_json::json!({ "retake": retake_data(p) }))
            }
            _ => Ok(Value::Null),
        };
        // Plain structs of strings and numbers always serialize.
        v.unwrap_or(Value::Null)
    }

    /// The phase of `state` with its `data` as read from a state file.
    pub(crate) fn from_parts(state: SessionState, data: Value) -> Result<Phase, String> {
        use SessionState as S;
        fn decode<T: serde::de::DeserializeOwned>(
            state: SessionState,
            data: Value,
        ) -> Result<T, String> {
            serde_json::from_value(data).map_err(|e| format!("`phase` of a {state} session: {e}"))
        }
        Ok(match state {
            S::Created => Phase::Created,
            S::WorkerExecuting => Phase::WorkerExecuting(decode(state, data)?),
            S::AuditPending => Phase::AuditPending,
            S::AuditorExecuting => Phase::AuditorExecuting(decode(state, data)?),
            S::ReiterationPending => Phase::ReiterationPending(decode(state, data)?),
            S::RecoveryPending => Phase::RecoveryPending(Box::new(decode(state, data)?)),
            S::Completed => Phase::Completed,
            S::Failed => Phase::Failed(failed_from(data)?),
            S::Rejected => Phase::Rejected,
            S::Interrupted => {
                let retake = match data.get("retake") {
                    Some(r) => Some(Box::new(retake_from(r, state)?)),
                    None => None,
                };
                Phase::Interrupted(Pause {
                    retake,
                    ..decode(state, data)?
                })
            }
        })
    }
}

/// Where to go back to, as the state file keeps it: the phase's state and its own data.
fn retake_data(p: &Phase) -> Value {
    serde_json::json!({ "state": p.state(), "data": p.data() })
}

/// The phase to go back to, from [`retake_data`]'s shape, in a phase of `state`.
fn retake_from(retake: &Value, state: SessionState) -> Result<Phase, String> {
    let bad = |what: &str| format!("`phase` of a {state} session: {what}");
    let to: SessionState = serde_json::from_value(retake["state"].clone())
        .map_err(|e| bad(&format!("retake.state: {e}")))?;
    // A pause inside a pause would never end.
    if to.is_terminal() || (to == SessionState::Interrupted && state == to) {
        return Err(bad(&format!("cannot be taken up again in {to}")));
    }
    Phase::from_parts(to, retake["data"].clone())
}

/// A FAILED phase's data as the state file keeps it: `null`, or where to take it up again.
fn failed_from(data: Value) -> Result<Failed, String> {
    if data.is_null() {
        return Ok(Failed::default());
    }
    let retake = data
        .get("retake")
        .ok_or_else(|| "`phase` of a FAILED session: no `retake`".to_string())?;
    Ok(Failed {
        retake: Some(Box::new(retake_from(retake, SessionState::Failed)?)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phase_round_trips_through_its_parts() {
        let phases = [
            Phase::Created,
            Phase::WorkerExecuting(Run {
                process: Some(ProcessIdentity {
                    pid: 7,
                    pgid: 7,
                    start_time: Some(99),
                }),
                stopping: Some(StopReason::InactivityTimeout),
                exited: None,
                failure: None,
                attempt: 2,
                progress: crate::session::Spent {
                    turns: 3,
                    tokens: 10,
                    usd: 0.0,
                },
            }),
            Phase::AuditPending,
            Phase::AuditorExecuting(AuditRun {
                prompt: "judge".into(),
                run: Run::default(),
                reasks: 1,
                note: Some("no verdict".into()),
                checked: true,
            }),
            Phase::ReiterationPending(Next::Rerun),
            Phase::RecoveryPending(Box::new(Evidence {
                reason: Some(StopReason::ExitCode),
                exit_code: Some(2),
                ..Evidence::default()
            })),
            Phase::Completed,
            Phase::failed(),
            Phase::Failed(Failed {
                retake: Some(Box::new(Phase::RecoveryPending(Box::new(Evidence {
                    reason: Some(StopReason::InactivityTimeout),
                    ..Evidence::default()
                })))),
            }),
            Phase::Rejected,
            Phase::Interrupted(Pause {
                during: Role::Auditor,
                cause: StopReason::OneshotDied,
                retake: None,
            }),
            Phase::Interrupted(Pause {
                during: Role::Auditor,
                cause: StopReason::Interrupted,
                retake: Some(Box::new(Phase::AuditorExecuting(AuditRun {
                    prompt: "judge".into(),
                    ..AuditRun::default()
                }))),
            }),
        ];
        for p in phases {
            let back = Phase::from_parts(p.state(), p.data()).unwrap();
            assert_eq!(back, p);
        }
    }

    #[test]
    fn missing_phase_data_is_named() {
        let e = Phase::from_parts(SessionState::Interrupted, Value::Null).unwrap_err();
        assert!(e.contains("INTERRUPTED"), "{e}");
    }
}
