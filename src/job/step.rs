//! The runner's decision core: one synchronous `step(event) -> effects` over a job in its
//! step, like [`crate::session::Session::step`] for a session. The runner's async loop turns
//! what happened (a claim, a provisioned workspace, a session's end, a harvest) into a
//! [`RunnerEvent`], and carries out the [`JobEffect`]s returned, in order. Every move goes
//! through [`super::next`], so the matrix of seed 001 is the only way a job moves; the policy's
//! `approve` hook chooses among what HARVESTING allows.

pub use super::events::{HarvestFacts, JobEffect, RunnerEvent, SessionEnd, SessionOutcome};
use super::record::{ArtifactVersion, Feedback, Job, PanelVerdict, Transition};
use super::{Harvest, JobState, JobTrigger, next};
use crate::policy::{Approval, ApprovalJob, ApprovalResult, ApproveDecision, RetryLimits};
use std::time::Duration;

/// The judgement calls a step needs: the policy's, in the runner; scripted, in tests.
pub trait JobJudge {
    /// The `approve(result, job)` hook. An error is a policy error: the job goes to
    /// INTERVENTION_REQUIRED with it.
    fn approve(
        &mut self,
        result: &ApprovalResult,
        job: &ApprovalJob,
    ) -> Result<ApproveDecision, String>;

    /// How transient failures are retried (the policy's `limits.retry`).
    fn retry(&self) -> RetryLimits;
}

/// A job during one step: the job, and what this step has learned so far that the job itself
/// does not keep (how its session ended, what the harvest found).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The job as the store will have it.
    pub job: Job,
    /// Who moves it (the runner's id), for the history.
    pub by: String,
    end: Option<SessionEnd>,
    harvest: Option<HarvestFacts>,
}

impl Step {
    /// A step of `job` by runner `by`.
    pub fn new(job: Job, by: impl Into<String>) -> Step {
        Step {
            job,
            by: by.into(),
            end: None,
            harvest: None,
        }
    }

    /// Takes `event` at `now` (ms since the epoch), asking `judge` where the policy decides,
    /// and returns what to do. An event the job's state does not expect changes nothing and
    /// asks for nothing: the empty list, which the runner reports as a failure of the step.
    pub fn step(
        &mut self,
        now: u64,
        event: RunnerEvent,
        judge: &mut dyn JobJudge,
    ) -> Vec<JobEffect> {
        use JobState as S;
        use RunnerEvent as E;
        match (self.job.state, event) {
            (S::Pending, E::Claimed { .. }) => {
                self.job.steps += 1;
                self.job.loops += 1;
                self.job.retries = 0;
                let mut fx = self.go(now, JobTrigger::Step, None);
                fx.push(JobEffect::Provision {
                    after: Duration::ZERO,
                });
                fx
            }
            (S::Provisioning, E::Claimed { .. }) => vec![JobEffect::Provision {
                after: Duration::ZERO,
            }],
            (S::Executing, E::Claimed { .. }) => {
                let reason = "its runner died mid-step (the lease expired)".to_string();
                self.recovering(now, reason, judge)
            }
            (S::Recovering, E::Claimed { .. }) => vec![JobEffect::Recover {
                session: self.job.session.clone(),
                after: Duration::ZERO,
            }],
            (S::Harvesting, E::Claimed { .. }) => match &self.job.session {
                Some(id) => vec![JobEffect::ReadSession(id.clone())],
                None => self.rest(
                    now,
                    JobTrigger::Harvested(Harvest::InterventionRequired),
                    "reclaimed in HARVESTING without a session to harvest".into(),
                ),
            },
            (S::Provisioning, E::Provisioned(ws)) => {
                self.job.workspace = Some(ws);
                let mut fx = self.go(now, JobTrigger::Provisioned, None);
                fx.push(JobEffect::Execute {
                    prompt: prompt(&self.job),
                    resume: None,
                });
                fx
            }
            (S::Provisioning, E::ProvisionFailed { reason, transient }) => {
                if transient && let Some(after) = self.retry_after(judge) {
                    return vec![JobEffect::Save(None), JobEffect::Provision { after }];
                }
                let reason = self.exhausted(reason, transient);
                self.rest(now, JobTrigger::ProvisionFailed, reason)
            }
            (S::Executing, E::SessionEnded(end)) => {
                self.job.session = Some(end.session.clone());
                if end.transient {
                    let reason = format!(
                        "session {} ended {}{}",
                        end.session,
                        end.outcome,
                        end.reason
                            .as_deref()
                            .map(|r| format!(": {r}"))
                            .unwrap_or_default()
                    );
                    return self.recovering(now, reason, judge);
                }
                let reason = format!("session {} ended {}", end.session, end.outcome);
                self.end = Some(end);
                let mut fx = self.go(now, JobTrigger::Completed, Some(reason));
                fx.push(self.harvest_effect());
                fx
            }
            (S::Harvesting, E::SessionEnded(end)) => {
                self.end = Some(end);
                vec![self.harvest_effect()]
            }
            (S::Recovering, E::Recovered { resume }) => {
                let why = match &resume {
                    Some(id) => format!("continuing session {id}"),
                    None => "starting a new session".to_string(),
                };
                let mut fx = self.go(now, JobTrigger::Recovered, Some(why));
                fx.push(JobEffect::Execute {
                    prompt: prompt(&self.job),
                    resume,
                });
                fx
            }
            (S::Recovering, E::RecoveryFailed { reason }) => {
                self.rest(now, JobTrigger::RecoveryFailed, reason)
            }
            (S::Harvesting, E::Harvested(facts)) => self.harvested(now, facts, judge),
            // A full disk: the work and the session's end are intact, and a harvest is
            // idempotent; INTERVENTION_REQUIRED would make a human resubmit (and redo) work
            // that only needs room to be committed. Saving anything would need room too.
            (
                S::Harvesting,
                E::HarvestFailed {
                    reason,
                    out_of_space: true,
                },
            ) => {
                vec![JobEffect::Abandon {
                    reason: format!("harvest failed: {reason}"),
                }]
            }
            (S::Harvesting, E::HarvestFailed { reason, .. }) => self.rest(
                now,
                JobTrigger::Harvested(Harvest::InterventionRequired),
                format!("harvest failed: {reason}"),
            ),
            (S::Harvesting, E::Audited(panel)) => self.decide(now, panel, judge),
            _ => Vec::new(),
        }
    }

    /// EXECUTING → RECOVERING, to try again after a backoff, or straight on to
    /// INTERVENTION_REQUIRED when the retries are spent.
    fn recovering(&mut self, now: u64, reason: String, judge: &mut dyn JobJudge) -> Vec<JobEffect> {
        let mut fx = self.go(now, JobTrigger::TimedOut, Some(reason.clone()));
        match self.retry_after(judge) {
            Some(after) => fx.push(JobEffect::Recover {
                session: self.job.session.clone(),
                after,
            }),
            None => {
                let reason = self.exhausted(reason, true);
                fx.extend(self.rest(now, JobTrigger::RecoveryFailed, reason));
            }
        }
        fx
    }

    /// Counts one more retry; the backoff before it, or `None` when the retries are spent.
    fn retry_after(&mut self, judge: &dyn JobJudge) -> Option<Duration> {
        let limits = judge.retry();
        if self.job.retries >= limits.attempts {
            return None;
        }
        self.job.retries += 1;
        Some(limits.delay(self.job.retries))
    }

    /// The reason for giving up, saying how many retries were spent.
    fn exhausted(&self, reason: String, transient: bool) -> String {
        if transient && self.job.retries > 0 {
            format!("{reason} (gave up after {} retries)", self.job.retries)
        } else {
            reason
        }
    }

    fn harvest_effect(&self) -> JobEffect {
        let title = self.job.spec.task.lines().next().unwrap_or("").trim();
        let title: String = title.chars().take(60).collect();
        JobEffect::Harvest {
            message: format!(
                "oneshot {} step {}: {title}\n\nsession: {}",
                self.job.id,
                self.job.steps,
                self.job.session.as_deref().unwrap_or("-")
            ),
        }
    }

    /// The harvest is in: update the no-progress signals, keep the artifact version, then
    /// ask the panel or decide.
    fn harvested(
        &mut self,
        now: u64,
        facts: HarvestFacts,
        judge: &mut dyn JobJudge,
    ) -> Vec<JobEffect> {
        let end = self.end.clone();
        let p = &mut self.job.progress;
        p.empty_diffs = if facts.empty { p.empty_diffs + 1 } else { 0 };
        let findings = end.as_ref().map(|e| e.findings.clone()).unwrap_or_default();
        p.same_findings = if findings.is_empty() {
            0
        } else if findings == p.last_findings {
            p.same_findings + 1
        } else {
            1
        };
        p.last_findings = findings;
        p.last_diff = Some(facts.diff_hash.clone());
        let artifact = ArtifactVersion {
            version: 0,
            step: self.job.steps,
            at_ms: now,
            session: self.job.session.clone(),
            outcome: end
                .as_ref()
                .map_or("UNKNOWN".into(), |e| e.outcome.to_string()),
            commit: facts.commit.clone(),
            diff_hash: facts.diff_hash.clone(),
            diff_stat: facts.diff_stat.clone(),
            files: facts.files.clone(),
            final_message: end
                .as_ref()
                .map(|e| e.final_message.clone())
                .unwrap_or_default(),
            verdict: end.as_ref().and_then(|e| e.verdict.clone()),
            confidence: end.as_ref().and_then(|e| e.confidence),
            panel: Vec::new(),
        };
        self.harvest = Some(facts);
        let completed = end.as_ref().is_some_and(|e| e.completed);
        let mut fx = vec![JobEffect::AddArtifact(artifact)];
        if completed && !self.job.spec.panel.is_empty() {
            fx.push(JobEffect::Save(None));
            fx.push(JobEffect::Audit(self.job.spec.panel.clone()));
        } else {
            fx.extend(self.decide(now, Vec::new(), judge));
        }
        fx
    }

    /// HARVESTING's outcome: the panel aggregated, the loop bound, then the policy.
    fn decide(
        &mut self,
        now: u64,
        panel: Vec<PanelVerdict>,
        judge: &mut dyn JobJudge,
    ) -> Vec<JobEffect> {
        let end = self.end.clone();
        let facts = self.harvest.clone().unwrap_or(HarvestFacts {
            commit: None,
            diff_hash: String::new(),
            diff_stat: String::new(),
            files: Vec::new(),
            empty: true,
        });
        let mut completed = end.as_ref().is_some_and(|e| e.completed);
        let mut reason = end.as_ref().and_then(|e| e.reason.clone());
        let mut fx = Vec::new();
        let mut panel_passed = None;
        if !panel.is_empty() {
            let (pass, why) = aggregate(self.job.spec.aggregate, &panel);
            panel_passed = Some(pass);
            if !pass {
                completed = false;
                reason = Some(why);
            }
            fx.push(JobEffect::AddArtifact(panel_artifact(
                &self.job,
                now,
                &facts,
                end.as_ref(),
                &panel,
            )));
        }
        let result = ApprovalResult {
            outcome: end
                .as_ref()
                .map_or("UNKNOWN".into(), |e| e.outcome.to_string()),
            completed,
            verdict: end.as_ref().and_then(|e| e.verdict.clone()),
            reason,
            confidence: end.as_ref().and_then(|e| e.confidence),
            diff_stat: facts.diff_stat.clone(),
            files: facts.files.clone(),
            empty_diff: facts.empty,
            panel,
            panel_passed,
        };
        let job = approval_job(&self.job);
        let (harvest, why) = match judge.approve(&result, &job) {
            // Rust decides what is possible, whichever judge answers.
            Ok(d) if d.approval == Approval::Approve && auto_approvable(&result).is_err() => {
                let why = auto_approvable(&result).err().unwrap_or_default();
                (
                    Harvest::InterventionRequired,
                    Some(format!("the policy approved, but {why}; a human must look")),
                )
            }
            Ok(d) => {
                let h = match d.approval {
                    Approval::Approve => Harvest::Success,
                    Approval::Human => Harvest::ApprovalRequired,
                    Approval::Intervene => Harvest::InterventionRequired,
                };
                (h, d.reason)
            }
            Err(e) => (
                Harvest::InterventionRequired,
                Some(format!("policy error in approve: {e}")),
            ),
        };
        // Rust bounds the loop whatever the policy says: past max_loops only an approval ends
        // the step anywhere but with a human fixing things. The max_loops-th step itself ends
        // as usual, so a human may still approve it (with max_loops = 1, the first attempt).
        let (harvest, why) = if harvest != Harvest::Success
            && self.job.loops > self.job.spec.limits.max_loops
        {
            (
                Harvest::InterventionRequired,
                Some(format!(
                    "max loops passed: {} steps since creation or the last resubmit (limits.max_loops = {}){}",
                    self.job.loops,
                    self.job.spec.limits.max_loops,
                    why.map(|w| format!("; {w}")).unwrap_or_default()
                )),
            )
        } else {
            (harvest, why)
        };
        // The feedback served its step.
        self.job.feedback = None;
        let why = why.unwrap_or_else(|| match harvest {
            Harvest::Success => "approved by the policy".into(),
            Harvest::ApprovalRequired => "a human signs off".into(),
            Harvest::InterventionRequired => "a human must intervene".into(),
        });
        fx.extend(self.rest(now, JobTrigger::Harvested(harvest), why));
        fx
    }

    /// Moves the job by `trigger` and asks to save it.
    fn go(&mut self, now: u64, trigger: JobTrigger, reason: Option<String>) -> Vec<JobEffect> {
        let from = self.job.state;
        let Ok(to) = next(from, trigger) else {
            // The arms above only fire triggers their state allows; a refusal here is a bug,
            // and the job is left where it is rather than moved illegally.
            return Vec::new();
        };
        self.job.state = to;
        self.job.reason = reason.clone();
        self.job.updated_ms = now;
        self.job.count(to.as_str());
        vec![JobEffect::Save(Some(Transition {
            from,
            to,
            trigger,
            reason,
            at_ms: now,
            by: self.by.clone(),
        }))]
    }

    /// Moves the job to a resting state by `trigger`: save (which releases the lease), done.
    fn rest(&mut self, now: u64, trigger: JobTrigger, reason: String) -> Vec<JobEffect> {
        let mut fx = self.go(now, trigger, Some(reason));
        fx.push(JobEffect::Done);
        fx
    }
}

/// The facts the `approve` hook sees about the job.
pub fn approval_job(job: &Job) -> ApprovalJob {
    ApprovalJob {
        id: job.id.clone(),
        task: job.spec.task.clone(),
        risk: job.spec.risk,
        step: job.loops,
        max_loops: job.spec.limits.max_loops,
        counters: job.counters.clone(),
        retries: job.retries,
        empty_diffs: job.progress.empty_diffs,
        same_findings: job.progress.same_findings,
        no_progress_limit: job.spec.limits.no_progress,
        inputs: job.spec.inputs.clone(),
    }
}

/// Whether the panel passes, and why not.
fn aggregate(how: super::record::Aggregate, panel: &[PanelVerdict]) -> (bool, String) {
    let done = panel
        .iter()
        .filter(|v| v.verdict == super::record::PanelWord::Done)
        .count();
    let pass = match how {
        super::record::Aggregate::All => done == panel.len(),
        super::record::Aggregate::Majority => done * 2 > panel.len(),
    };
    let dissent: Vec<String> = panel
        .iter()
        .filter(|v| v.verdict != super::record::PanelWord::Done)
        .map(|v| format!("{} said {}: {}", v.auditor, v.verdict, v.reason))
        .collect();
    (
        pass,
        format!(
            "the panel did not pass ({done} of {} said done, {} needed): {}",
            panel.len(),
            match how {
                super::record::Aggregate::All => "all",
                super::record::Aggregate::Majority => "a majority",
            },
            dissent.join("; ")
        ),
    )
}

fn panel_artifact(
    job: &Job,
    now: u64,
    facts: &HarvestFacts,
    end: Option<&SessionEnd>,
    panel: &[PanelVerdict],
) -> ArtifactVersion {
    ArtifactVersion {
        version: 0,
        step: job.steps,
        at_ms: now,
        session: job.session.clone(),
        outcome: end.map_or("UNKNOWN".into(), |e| e.outcome.to_string()),
        commit: None,
        diff_hash: facts.diff_hash.clone(),
        diff_stat: facts.diff_stat.clone(),
        files: facts.files.clone(),
        final_message: end.map(|e| e.final_message.clone()).unwrap_or_default(),
        verdict: Some(
            if aggregate(job.spec.aggregate, panel).0 {
                "done"
            } else {
                "retry"
            }
            .into(),
        ),
        confidence: None,
        panel: panel.to_vec(),
    }
}

/// The worker's first prompt for a step: the task, the inputs, and a reject's feedback as
/// PREVIOUS ATTEMPT / CRITIQUE / INSTRUCTION (seed 003 §5.3).
pub fn prompt(job: &Job) -> String {
    let mut p = job.spec.task.clone();
    if !job.spec.inputs.is_empty() {
        p.push_str("\n\nINPUTS:");
        for (k, v) in &job.spec.inputs {
            p.push_str(&format!("\n- {k}: {v}"));
        }
    }
    if let Some(Feedback { previous, critique }) = &job.feedback {
        p.push_str(&format!(
            "\n\nPREVIOUS ATTEMPT: {previous}\nCRITIQUE: {critique}\nINSTRUCTION: Improve the \
             previous attempt based on the critique."
        ));
    }
    p
}

/// Whether work can be approved without a human — the job core's bound, whatever a policy or
/// another judge says: only work that completed (its session completed and, with a panel, the
/// panel passed). `Err` says why not, as the end of a sentence.
pub fn auto_approvable(result: &crate::policy::ApprovalResult) -> Result<(), String> {
    if result.completed {
        return Ok(());
    }
    Err(if result.panel_passed == Some(false) {
        "the panel did not pass the work, which cannot be auto-approved".to_string()
    } else {
        format!(
            "a session that ended {} did not complete and cannot be auto-approved",
            result.outcome
        )
    })
}
