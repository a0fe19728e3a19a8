//! `oneshot job replay`: what another policy would have decided where a job's policy decided.
//! Each recorded judgement ([`crate::job::decision::JobDecision`]) is asked again of the other
//! policy with the input the job's policy saw, and its answer goes through the same rules the
//! job core applies ([`settle`] and [`retry_after`]), so Rust's bounds hold in a replay as
//! they did in the step. A job's later decisions depended on where the first different one
//! would have sent it (another human verdict, another run of the agents), so a replay says
//! where the paths part and what each later decision would have been on the recorded path,
//! never a future it cannot know.

use crate::job::decision::{Judgement, retry_after, settle};
use crate::job::step::JobJudge;
use crate::job::store::{JobStore, JobStoreError};
use serde::Serialize;
use std::time::Duration;

/// What a decision said: where the job went (a state, a retry's wait, a retry given up), why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Said {
    /// `SUCCESS`, `APPROVAL_REQUIRED`, `INTERVENTION_REQUIRED`, `retry after 2s`, `gave up`.
    pub outcome: String,
    /// Why (the transition's reason for `approve`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How a replayed decision compares with the recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compared {
    /// The same outcome for the same reason.
    Same,
    /// The same outcome, another reason.
    ReasonChanged,
    /// Another outcome: the job would have gone elsewhere.
    Differs,
}

/// One recorded decision and the replaying policy's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replayed {
    /// The decision's position among the job's.
    pub seq: u64,
    /// The step it was made in.
    pub step: u32,
    /// `approve` or `retry`.
    pub hook: &'static str,
    /// What the job's policy decided.
    pub recorded: Said,
    /// What the replaying policy decides.
    pub replayed: Said,
    /// How they compare.
    pub compared: Compared,
}

/// A job's decisions asked again of another policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobReplay {
    /// The job.
    pub job_id: String,
    /// The replaying policy's content hash, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_hash: Option<String>,
    /// Every recorded decision, oldest first.
    pub decisions: Vec<Replayed>,
    /// One word for the whole: `same`, `reasons` (only reasons changed), `differs`, or `none`
    /// (nothing was recorded to replay).
    pub verdict: &'static str,
}

impl JobReplay {
    /// Whether any decision goes elsewhere.
    pub fn differs(&self) -> bool {
        self.verdict == "differs"
    }

    /// The first decision that would have sent the job elsewhere.
    pub fn first_difference(&self) -> Option<&Replayed> {
        self.decisions
            .iter()
            .find(|d| d.compared == Compared::Differs)
    }

    /// The report a person reads: a line per decision, then one verdict.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if self.decisions.is_empty() {
            out.push_str(&format!(
                "job {} has no decisions to replay: its policy has not judged it yet (no harvest, \
                 no retry), or it ran before oneshot recorded them\n",
                self.job_id
            ));
            return out;
        }
        for d in &self.decisions {
            let mark = match d.compared {
                Compared::Same => "same",
                Compared::ReasonChanged => "reason changed",
                Compared::Differs => "DIFFERS",
            };
            out.push_str(&format!(
                "#{} step {} {}: {} → {}  [{mark}]\n",
                d.seq,
                d.step,
                d.hook,
                shown(&d.recorded),
                shown(&d.replayed)
            ));
        }
        out.push_str(&match self.first_difference() {
            Some(d) => format!(
                "differs: at decision {} (step {}, {}) this policy sends the job to {} where it \
                 went to {}; what followed depended on that move (a human's verdict, another run \
                 of the agents), so later lines say what this policy decides on the recorded \
                 path, not where the job would be now\n",
                d.seq, d.step, d.hook, d.replayed.outcome, d.recorded.outcome
            ),
            None if self.verdict == "reasons" => {
                "same moves: every decision goes where it went; some for another reason\n".into()
            }
            None => "same: every decision goes where it went, for the same reason\n".into(),
        });
        out
    }
}

fn shown(s: &Said) -> String {
    match &s.reason {
        Some(r) => format!("{} ({r})", s.outcome),
        None => s.outcome.clone(),
    }
}

/// Asks `judge` every decision recorded about job `id` (an id or unique prefix) in `store`.
pub fn replay(
    store: &dyn JobStore,
    id: &str,
    judge: &mut dyn JobJudge,
) -> Result<JobReplay, JobStoreError> {
    let job = store.get(id)?;
    let mut decisions = Vec::new();
    for d in store.decisions(&job.id)? {
        let (recorded, replayed) = match &d.judgement {
            Judgement::Approve {
                result,
                job,
                outcome,
                reason,
                ..
            } => {
                let answer = judge.approve(result, job);
                let (harvest, why) = settle(result, job, &answer);
                (
                    Said {
                        outcome: state_of(*outcome).to_string(),
                        reason: Some(reason.clone()),
                    },
                    Said {
                        outcome: state_of(harvest).to_string(),
                        reason: Some(why),
                    },
                )
            }
            Judgement::Retry {
                retries, after_ms, ..
            } => (
                Said {
                    outcome: waited(after_ms.map(Duration::from_millis)),
                    reason: None,
                },
                Said {
                    outcome: waited(retry_after(&judge.retry(), *retries)),
                    reason: None,
                },
            ),
        };
        let compared = if recorded.outcome != replayed.outcome {
            Compared::Differs
        } else if recorded.reason != replayed.reason {
            Compared::ReasonChanged
        } else {
            Compared::Same
        };
        decisions.push(Replayed {
            seq: d.seq,
            step: d.step,
            hook: d.judgement.hook(),
            recorded,
            replayed,
            compared,
        });
    }
    let verdict = if decisions.is_empty() {
        "none"
    } else if decisions.iter().any(|d| d.compared == Compared::Differs) {
        "differs"
    } else if decisions
        .iter()
        .any(|d| d.compared == Compared::ReasonChanged)
    {
        "reasons"
    } else {
        "same"
    };
    Ok(JobReplay {
        job_id: job.id,
        policy_hash: judge.policy_hash(),
        decisions,
        verdict,
    })
}

fn state_of(h: crate::job::Harvest) -> crate::job::JobState {
    crate::job::next(
        crate::job::JobState::Harvesting,
        crate::job::JobTrigger::Harvested(h),
    )
    .unwrap_or(crate::job::JobState::InterventionRequired)
}

fn waited(after: Option<Duration>) -> String {
    match after {
        Some(d) => format!("retry after {}", humantime::format_duration(d)),
        None => "gave up".to_string(),
    }
}
