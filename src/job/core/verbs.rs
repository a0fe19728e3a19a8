//! A human's verbs (`activate`, `approve`, `reject`, `resubmit`, `suspend`, `resume`,
//! `cancel`): what each does to a job and the audit entry that records it (seed 003 §4.5),
//! judged by the job core like a runner's events ([`Step::step`] with [`JobEvent::Verb`]).
//! [`give`](crate::job::verbs::give) is the front door the CLI (and a dashboard) calls: it
//! reads the job and what the verb needs, asks the core, and hands its [`JobEffect::Decide`]
//! to [`crate::job::store::Jobs::decide`], which writes it only if the job has not moved.

use crate::job::record::{AuditAction, AuditEntry, Feedback, Job, Transition};
use crate::job::step::{JobEffect, JobEvent, NoJudge, Step, StepError, VerbWrite};
use crate::job::{JobState, JobTrigger, Refused, next};
use serde_json::{Map, Value};

/// Who decides and the facts worth keeping with the decision.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerbContext {
    /// The actor (`$ONESHOT_ACTOR`, else the OS user).
    pub actor: String,
    /// Now, ms since the epoch.
    pub now_ms: u64,
    /// `reject --feedback TEXT`: the critique.
    pub feedback: Option<String>,
    /// The latest artifact's summary (final message and diff stat): a reject's PREVIOUS
    /// ATTEMPT.
    pub previous: Option<String>,
    /// The latest artifact's diff hash: what was approved or rejected.
    pub diff_hash: Option<String>,
    /// The policy's content hash now: which policy version the human overruled or confirmed.
    pub policy_hash: Option<String>,
}

/// Why a verb was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerbError {
    /// The state does not allow it.
    #[error("job {id}: {refused}")]
    Refused {
        /// The job.
        id: String,
        /// The machine's refusal, naming what the state allows.
        refused: Refused,
    },
    /// `reject` without feedback: the next attempt would be told nothing.
    #[error(
        "job {id}: reject needs --feedback TEXT: the critique is what the next attempt is told \
         (PREVIOUS ATTEMPT / CRITIQUE / INSTRUCTION)"
    )]
    NoFeedback {
        /// The job.
        id: String,
    },
    /// Not a human's verb.
    #[error("{verb} is the runner's to give, not a human's")]
    NotAVerb {
        /// The trigger.
        verb: JobTrigger,
    },
    /// What the human saw is no longer what the job is: another step ran, a newer diff was
    /// made, or its state moved (the dashboard's form was older than the job).
    #[error(
        "job {id}: the page you acted on is out of date ({what}); nothing was written; look \
         at the job again and decide on what it is now"
    )]
    Stale {
        /// The job.
        id: String,
        /// What differs: what was seen, and what the job is now.
        what: String,
    },
    /// `job cleanup` of a job that may still step: only a finished job's workspace goes.
    #[error(
        "clean up {id}: it is {state}; only a SUCCESS or CANCELED job's workspace is removed \
         (a job that may still step needs it)"
    )]
    NotFinished {
        /// The job.
        id: String,
        /// Its state.
        state: JobState,
    },
    /// `land` where the state allows it but the job does not (already landed, or in
    /// INTERVENTION_REQUIRED for another reason than a failed land).
    #[error("job {id}: land is refused: {why}")]
    NotLandable {
        /// The job.
        id: String,
        /// Why, and what to do instead.
        why: String,
    },
}

/// Applies `verb` to `job` through the job core ([`Step::step`] with [`JobEvent::Verb`]):
/// the job as it leaves it, the transition and the audit entry. `step` is not a verb here: a
/// step is claimed from the store by a runner.
pub fn apply(
    job: &Job,
    verb: JobTrigger,
    cx: &VerbContext,
) -> Result<(Job, Transition, AuditEntry), VerbError> {
    let (moved, w) = judge(job, verb, cx)?;
    let transition = w.transition.ok_or(VerbError::NotAVerb { verb })?;
    Ok((moved, transition, w.audit))
}

/// Gives `verb` to the job core over `job`: the job as the verb leaves it, and what to write.
pub(crate) fn judge(
    job: &Job,
    verb: JobTrigger,
    cx: &VerbContext,
) -> Result<(Job, VerbWrite), VerbError> {
    let mut core = Step::new(job.clone(), cx.actor.clone());
    let event = JobEvent::Verb {
        verb,
        cx: cx.clone(),
    };
    let fx = core
        .step(cx.now_ms, event, &mut NoJudge)
        .map_err(|e| match e {
            StepError::Verb(v) => v,
            // A verb is never a runner's event; said as the verb it was.
            _ => VerbError::NotAVerb { verb },
        })?;
    let decided = fx.into_iter().find_map(|e| match e {
        JobEffect::Decide(w) => Some(w),
        _ => None,
    });
    let decided = decided.ok_or(VerbError::NotAVerb { verb })?;
    Ok((core.job, decided))
}

impl Step {
    /// A human's verb, judged in the core: the matrix's move, what the verb does to the job
    /// (a reject's feedback kept for the next prompt, a resubmit's fresh loop bound), and one
    /// [`JobEffect::Decide`] writing the move with its audit entry at once.
    pub(in crate::job) fn verb(
        &mut self,
        now: u64,
        verb: JobTrigger,
        cx: &VerbContext,
    ) -> Result<Vec<JobEffect>, StepError> {
        if !verb.is_verb() || verb == JobTrigger::Step {
            return Err(VerbError::NotAVerb { verb }.into());
        }
        let before = self.job.clone();
        next(before.state(), verb).map_err(|refused| VerbError::Refused {
            id: before.id.clone(),
            refused,
        })?;
        let feedback = cx
            .feedback
            .as_deref()
            .map(str::trim)
            .filter(|f| !f.is_empty());
        // A reject's critique waits in PENDING for the next attempt's prompt.
        let mut kept = None;
        match verb {
            JobTrigger::Reject => {
                let Some(critique) = feedback else {
                    return Err(VerbError::NoFeedback { id: before.id }.into());
                };
                kept = Some(Feedback {
                    previous: cx
                        .previous
                        .clone()
                        .unwrap_or_else(|| "(no artifact was recorded)".into()),
                    critique: critique.to_string(),
                });
            }
            JobTrigger::Resubmit => {
                // A human fixed things: the loop bound and the no-progress signals start over.
                self.job.loops = 0;
                self.job.retries = 0;
                self.job.progress = Default::default();
            }
            JobTrigger::Resume => self.job.retries = 0,
            _ => {}
        }
        let reason = crate::job::JobReason::Verb {
            verb: verb.name().to_string(),
            actor: cx.actor.clone(),
            feedback: feedback
                .filter(|_| verb == JobTrigger::Reject)
                .map(str::to_string),
        };
        let Some(transition) = self.moved(now, verb, Some(reason), &cx.actor) else {
            // `next` allowed it just above.
            return Err(StepError::Unexpected {
                event: verb.name(),
                state: before.state(),
            });
        };
        if let Some(f) = kept {
            self.job.phase = crate::job::JobPhase::Pending { feedback: Some(f) };
        }
        self.job.count(verb.name());
        // Only humans' verbs get here (checked above), each of which has its action.
        let action = AuditAction::of_verb(verb).ok_or(VerbError::NotAVerb { verb })?;
        let audit = audit_entry(&before, action, transition.to, cx);
        Ok(vec![JobEffect::Decide(VerbWrite {
            expected: before.state(),
            revoke: verb == JobTrigger::Cancel && !before.state().is_resting(),
            transition: Some(transition),
            audit,
        })])
    }
}

/// The audit entry of `action` on `job` (also used for `create`, which has no state to come
/// from).
pub fn audit_entry(job: &Job, action: AuditAction, to: JobState, cx: &VerbContext) -> AuditEntry {
    let mut m = Map::new();
    if action != AuditAction::Create {
        m.insert("from".into(), Value::from(job.state().as_str()));
    }
    m.insert("to".into(), Value::from(to.as_str()));
    let mut put = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            m.insert(k.into(), Value::from(v.as_str()));
        }
    };
    put("feedback", &cx.feedback);
    put("diff_hash", &cx.diff_hash);
    put("policy_hash", &cx.policy_hash);
    put("session", &job.session().map(str::to_string));
    AuditEntry::job(&job.id, action, &cx.actor, cx.now_ms, m)
}

/// What a human saw when they chose a verb (a dashboard's form carries it): the job's state,
/// its step count, and its latest artifact's diff hash (empty when it has none). A verb given
/// with it is bound to it: an approval of an older diff never approves a newer one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The state shown.
    pub state: JobState,
    /// The job's steps when shown (each step may make a new artifact).
    pub attempt: u32,
    /// The latest artifact's diff hash when shown; empty when there was none.
    pub diff_hash: String,
}

/// Whether `job`'s workspace may be removed (`job cleanup`): only once it is SUCCESS or
/// CANCELED, where no step will need it again.
pub fn may_clean_up(job: &Job) -> Result<(), VerbError> {
    match job.state() {
        JobState::Success | JobState::Canceled => Ok(()),
        state => Err(VerbError::NotFinished {
            id: job.id.clone(),
            state,
        }),
    }
}

impl Seen {
    /// What `job` (with its latest artifact's diff hash) shows now.
    pub fn of(job: &Job, diff_hash: Option<&str>) -> Seen {
        Seen {
            state: job.state(),
            attempt: job.steps,
            diff_hash: diff_hash.unwrap_or_default().to_string(),
        }
    }

    /// Whether `job`, whose latest artifact's diff hash is `diff_hash`, is still what was
    /// seen: [`VerbError::Stale`], saying what differs, when it is not.
    pub fn still(&self, job: &Job, diff_hash: Option<&str>) -> Result<(), VerbError> {
        match self.differs(&Seen::of(job, diff_hash)) {
            Some(what) => Err(VerbError::Stale {
                id: job.id.clone(),
                what,
            }),
            None => Ok(()),
        }
    }

    /// How `now` differs from what was seen, said for a person; `None` when it does not.
    fn differs(&self, now: &Seen) -> Option<String> {
        if self.attempt != now.attempt {
            return Some(format!(
                "it showed step {}; the job has taken {} since",
                self.attempt, now.attempt
            ));
        }
        if self.diff_hash != now.diff_hash {
            return Some(format!(
                "it showed diff {}; the job's latest is {}",
                short(&self.diff_hash),
                short(&now.diff_hash)
            ));
        }
        if self.state != now.state {
            return Some(format!(
                "it showed {}; the job is {} now",
                self.state, now.state
            ));
        }
        None
    }
}

/// A diff hash's first characters, or `none`.
fn short(hash: &str) -> String {
    match hash {
        "" => "none".to_string(),
        h => h.chars().take(12).collect(),
    }
}
