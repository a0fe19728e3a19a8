//! The job's decision core: one synchronous `step(event) -> effects` over a job, like
//! [`crate::session::Session::step`] for a session. The runner's async loop turns what happened
//! (a claim, a provisioned workspace, a session's end, a harvest) into a [`RunnerEvent`]; a
//! human's verb (`approve`, `reject`, `cancel`…) comes as [`JobEvent::Verb`]; either way the
//! core moves the job and returns the [`JobEffect`]s to carry out, in order. Every move goes
//! through [`crate::job::next`], so the matrix of seed 001 is the only way a job moves; the policy's
//! `approve` hook chooses among what HARVESTING allows and `limits.retry` how often a transient
//! failure is retried, each judgement recorded ([`JobEffect::Decided`]) before the move it
//! leads to; the Rust bounds ([`crate::job::decision::settle`]) hold whatever the judge answers.

pub use crate::job::decision::auto_approvable;
use crate::job::decision::{JobDecision, Judgement, retry_after, settle};
pub use crate::job::events::{
    Found, HarvestFacts, JobEffect, JobEvent, RunnerEvent, SessionEnd, SessionOutcome, StepError,
    VerbWrite,
};
pub use crate::job::judge::{JobJudge, NoJudge};
use crate::job::panel::{aggregate, panel_artifact};
use crate::job::record::{ArtifactVersion, Feedback, Job, PanelVerdict, Transition};
use crate::job::{Harvest, JobReason, JobState, JobTrigger, next};
use crate::policy::{ApprovalJob, ApprovalResult};
use std::time::Duration;

/// A job in the core: the job, and what its current step has learned so far that the job
/// itself does not keep (how its session ended, what the harvest found).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The job as the store will have it.
    pub job: Job,
    /// Who moves it in a step (the runner's id), for the history; a verb names its actor.
    pub by: String,
    end: Option<SessionEnd>,
    harvest: Option<HarvestFacts>,
}

impl Step {
    /// The core over `job`, moved by runner `by` (for a verb, its actor is named instead).
    pub fn new(job: Job, by: impl Into<String>) -> Step {
        Step {
            job,
            by: by.into(),
            end: None,
            harvest: None,
        }
    }

    /// Takes `event` at `now` (ms since the epoch), asking `judge` where the policy decides,
    /// and returns what to do, in order. An event the job's state does not expect, or a verb
    /// that does not apply, changes nothing and says why.
    pub fn step(
        &mut self,
        now: u64,
        event: impl Into<JobEvent>,
        judge: &mut dyn JobJudge,
    ) -> Result<Vec<JobEffect>, StepError> {
        match event.into() {
            JobEvent::Verb {
                verb: JobTrigger::Land,
                ..
            } => self.land(),
            JobEvent::Verb { verb, cx } => self.verb(now, verb, &cx),
            JobEvent::Landed { outcome, cx } => self.landed(now, outcome, &cx),
            JobEvent::Runner(e) => {
                let (name, state) = (e.name(), self.job.state());
                let fx = self.runner(now, e, judge);
                if fx.is_empty() {
                    return Err(StepError::Unexpected { event: name, state });
                }
                Ok(fx)
            }
        }
    }

    /// A runner's event; the empty list for one the state does not expect.
    fn runner(&mut self, now: u64, event: RunnerEvent, judge: &mut dyn JobJudge) -> Vec<JobEffect> {
        use JobState as S;
        use RunnerEvent as E;
        match (self.job.state(), event) {
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
                self.recovering(now, JobReason::LeaseExpired, judge)
            }
            (S::Recovering, E::Claimed { .. }) => vec![JobEffect::Recover {
                session: self.job.session().map(str::to_string),
                after: Duration::ZERO,
            }],
            (S::Harvesting, E::Claimed { .. }) => match &self.job.session() {
                Some(id) => vec![JobEffect::ReadSession(id.to_string())],
                None => self.rest(
                    now,
                    JobTrigger::Harvested(Harvest::InterventionRequired),
                    JobReason::failed("reclaimed in HARVESTING without a session to harvest"),
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
                let reason = JobReason::failed(reason);
                if !transient {
                    return self.rest(now, JobTrigger::ProvisionFailed, reason);
                }
                match self.retry(now, &reason, judge) {
                    Some((after, mut fx)) => {
                        fx.push(self.save());
                        fx.push(JobEffect::Provision { after });
                        fx
                    }
                    None => {
                        let mut fx = self.retry_spent(now, &reason, judge);
                        let reason = self.exhausted(reason);
                        fx.extend(self.rest(now, JobTrigger::ProvisionFailed, reason));
                        fx
                    }
                }
            }
            // Recorded before it runs, so that a runner that dies now leaves the session to
            // recover.
            (S::Executing, E::SessionMade { session }) => {
                self.job.set_session(session);
                vec![self.save(), JobEffect::RunSession]
            }
            (S::Executing, E::SessionEnded(end)) => self.session_ended(now, end, judge),
            (S::Harvesting, E::SessionEnded(end)) => {
                self.end = Some(end);
                vec![self.harvest_effect()]
            }
            (S::Recovering, E::Inspected(found)) => self.inspected(now, found, judge),
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
                JobReason::failed(format!("harvest failed: {reason}")),
            ),
            (S::Harvesting, E::Audited(panel)) => self.decide(now, panel, judge),
            _ => Vec::new(),
        }
    }

    /// The session inside EXECUTING ended: on to the harvest, or — when it did not end on its
    /// own merits — to recovery.
    fn session_ended(
        &mut self,
        now: u64,
        end: SessionEnd,
        judge: &mut dyn JobJudge,
    ) -> Vec<JobEffect> {
        self.job.set_session(end.session.clone());
        if end.transient() {
            let reason = JobReason::SessionEnded {
                session: end.session.clone(),
                outcome: end.outcome.to_string(),
                why: end.reason.clone(),
            };
            return self.recovering(now, reason, judge);
        }
        let reason = JobReason::SessionEnded {
            session: end.session.clone(),
            outcome: end.outcome.to_string(),
            why: None,
        };
        self.end = Some(end);
        let mut fx = self.go(now, JobTrigger::Completed, Some(reason));
        fx.push(self.harvest_effect());
        fx
    }

    /// What recovery found decides how the execution goes on: a session that rests in a final
    /// state (it ended before its runner could say so) is harvested; one that can go on is
    /// resumed; none, and a new one starts; one that cannot be read needs a human.
    fn inspected(&mut self, now: u64, found: Found, judge: &mut dyn JobJudge) -> Vec<JobEffect> {
        match found {
            Found::Nothing => {
                let mut fx = self.go(now, JobTrigger::Recovered, Some(JobReason::NewSession));
                fx.push(JobEffect::Execute {
                    prompt: prompt(&self.job),
                    resume: None,
                });
                fx
            }
            Found::Elsewhere {
                session,
                runner,
                account,
                workspace,
            } => {
                if let Some(ws) = workspace {
                    self.job.workspace = Some(ws);
                }
                let why = JobReason::FreshConversation { session, runner };
                let mut fx = self.go(now, JobTrigger::Recovered, Some(why));
                fx.push(JobEffect::Execute {
                    prompt: continued(&self.job, &account),
                    resume: None,
                });
                fx
            }
            Found::Session(end) if !end.transient() => {
                let why = JobReason::HadEnded {
                    session: end.session.clone(),
                };
                let mut fx = self.go(now, JobTrigger::Recovered, Some(why));
                fx.extend(self.session_ended(now, end, judge));
                fx
            }
            Found::Session(end) => {
                let why = JobReason::Continuing {
                    session: end.session.clone(),
                };
                let mut fx = self.go(now, JobTrigger::Recovered, Some(why));
                fx.push(JobEffect::Execute {
                    prompt: prompt(&self.job),
                    resume: Some(end.session),
                });
                fx
            }
            Found::Unreadable { reason } => {
                self.rest(now, JobTrigger::RecoveryFailed, JobReason::failed(reason))
            }
        }
    }

    /// EXECUTING → RECOVERING, to try again after a backoff, or straight on to
    /// INTERVENTION_REQUIRED when the retries are spent.
    fn recovering(
        &mut self,
        now: u64,
        reason: JobReason,
        judge: &mut dyn JobJudge,
    ) -> Vec<JobEffect> {
        match self.retry(now, &reason, judge) {
            Some((after, mut fx)) => {
                fx.extend(self.go(now, JobTrigger::TimedOut, Some(reason)));
                fx.push(JobEffect::Recover {
                    session: self.job.session().map(str::to_string),
                    after,
                });
                fx
            }
            None => {
                let mut fx = self.retry_spent(now, &reason, judge);
                let spent = self.exhausted(reason.clone());
                fx.extend(self.go(now, JobTrigger::TimedOut, Some(reason)));
                fx.extend(self.rest(now, JobTrigger::RecoveryFailed, spent));
                fx
            }
        }
    }

    /// Asks `limits.retry` about a transient `failure`: the backoff before the next try and
    /// the judgement's record, or `None` when the retries are spent (nothing recorded yet:
    /// the caller records the giving up in its own words, [`Step::retry_spent`]).
    fn retry(
        &mut self,
        now: u64,
        failure: &JobReason,
        judge: &dyn JobJudge,
    ) -> Option<(Duration, Vec<JobEffect>)> {
        let limits = judge.retry();
        let after = retry_after(&limits, self.job.retries)?;
        let record = self.decision(
            now,
            judge,
            Judgement::Retry {
                failure: failure.to_string(),
                retries: self.job.retries,
                attempts: limits.attempts,
                after_ms: Some(after.as_millis() as u64),
            },
        );
        self.job.retries += 1;
        Some((after, vec![record]))
    }

    /// The record of `limits.retry` saying the retries of a transient `failure` are spent.
    fn retry_spent(&self, now: u64, failure: &JobReason, judge: &dyn JobJudge) -> Vec<JobEffect> {
        vec![self.decision(
            now,
            judge,
            Judgement::Retry {
                failure: failure.to_string(),
                retries: self.job.retries,
                attempts: judge.retry().attempts,
                after_ms: None,
            },
        )]
    }

    fn decision(&self, now: u64, judge: &dyn JobJudge, judgement: Judgement) -> JobEffect {
        JobEffect::Decided(JobDecision {
            seq: 0,
            job_id: self.job.id.clone(),
            step: self.job.steps,
            at_ms: now,
            policy_hash: judge.policy_hash(),
            judgement,
        })
    }

    /// The reason for giving up on a transient failure, saying how many retries were spent.
    fn exhausted(&self, failure: JobReason) -> JobReason {
        if self.job.retries > 0 {
            JobReason::GaveUp {
                failure: Box::new(failure),
                retries: self.job.retries,
            }
        } else {
            failure
        }
    }

    /// The harvest's commit: the task's first line as the subject, and trailers saying the
    /// job, its step and session, and the agent that did the work (the author is the person
    /// who asked for it, oneshot the committer).
    fn harvest_effect(&self) -> JobEffect {
        let title = self.job.spec.task.lines().next().unwrap_or("").trim();
        let title: String = title.chars().take(60).collect();
        let mut message = format!(
            "{title}\n\nJob: {} (step {})\nSession: {}",
            self.job.id,
            self.job.steps,
            self.job.session().unwrap_or("-")
        );
        if let Some(agent) = co_author(&self.job.spec.worker) {
            message.push_str(&format!("\nCo-authored-by: {agent}"));
        }
        JobEffect::Harvest { message }
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
            session: self.job.session().map(str::to_string),
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
        let completed = end.as_ref().is_some_and(SessionEnd::completed);
        let mut fx = vec![JobEffect::AddArtifact(artifact)];
        if completed && !self.job.spec.panel.is_empty() {
            fx.push(self.save());
            fx.push(JobEffect::Audit(self.job.spec.panel.clone()));
        } else {
            fx.extend(self.decide(now, Vec::new(), judge));
        }
        fx
    }

    /// HARVESTING's outcome: the panel aggregated, then the policy's `approve` within Rust's
    /// bounds ([`settle`]), recorded before the move.
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
        let mut completed = end.as_ref().is_some_and(SessionEnd::completed);
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
                pass,
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
        let answer = judge.approve(&result, &job);
        let (harvest, why) = settle(&result, &job, &answer);
        let (answer, error) = match answer {
            Ok(d) => (Some(d), None),
            Err(e) => (None, Some(e)),
        };
        fx.push(self.decision(
            now,
            judge,
            Judgement::Approve {
                result,
                job,
                answer,
                error,
                outcome: harvest,
                reason: why.clone(),
            },
        ));
        fx.extend(self.rest(
            now,
            JobTrigger::Harvested(harvest),
            JobReason::Judged { why },
        ));
        fx
    }

    /// Moves the job by `trigger`, counting the state it enters, and asks to save it.
    fn go(&mut self, now: u64, trigger: JobTrigger, reason: Option<JobReason>) -> Vec<JobEffect> {
        let by = self.by.clone();
        let Some(t) = self.moved(now, trigger, reason, &by) else {
            return Vec::new();
        };
        self.job.count(t.to.as_str());
        vec![JobEffect::Save {
            job: Box::new(self.job.clone()),
            transition: Some(t),
        }]
    }

    /// Moves the job by `trigger` (the one place a job's state changes) and returns the
    /// transition; `None`, the job left where it is, when the matrix refuses it — the callers
    /// only fire triggers their state allows, so a refusal here is a bug, never an illegal
    /// move.
    pub(in crate::job) fn moved(
        &mut self,
        now: u64,
        trigger: JobTrigger,
        reason: Option<JobReason>,
        by: &str,
    ) -> Option<Transition> {
        let from = self.job.state();
        let to = next(from, trigger).ok()?;
        self.job.enter(to);
        self.job.reason = reason.clone();
        self.job.updated_ms = now;
        Some(Transition {
            from,
            to,
            trigger,
            reason,
            at_ms: now,
            by: by.to_string(),
        })
    }

    /// Asks to write the job as it stands, without a move.
    fn save(&self) -> JobEffect {
        JobEffect::Save {
            job: Box::new(self.job.clone()),
            transition: None,
        }
    }

    /// Moves the job to a resting state by `trigger`: save (which releases the lease), done.
    fn rest(&mut self, now: u64, trigger: JobTrigger, reason: JobReason) -> Vec<JobEffect> {
        let mut fx = self.go(now, trigger, Some(reason));
        fx.push(JobEffect::Done);
        fx
    }
}

/// The identity a worker agent signs its work with in a `Co-authored-by` trailer; `None` for a
/// command (`cmd:…`), which is the user's own.
fn co_author(worker: &str) -> Option<&'static str> {
    let kind = crate::agent::AgentSpec::parse(worker).ok()?.kind;
    Some(kind.co_author())
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

/// The prompt of a fresh session that takes over from one that ran on another machine: the
/// job's prompt, then what the earlier attempt last said and that its work is already in the
/// workspace (the job's branch as the other runner pushed it).
pub fn continued(job: &Job, account: &str) -> String {
    let mut p = prompt(job);
    let said = if account.trim().is_empty() {
        "(nothing recorded)"
    } else {
        account.trim()
    };
    p.push_str(&format!(
        "\n\nEARLIER ATTEMPT: an earlier attempt at this task ran on another machine, which \
         stopped before it finished. Its committed work is already in this workspace. What it \
         last said: {said}\nINSTRUCTION: Continue the task from where it stopped."
    ));
    p
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
    if let Some(Feedback { previous, critique }) = job.feedback() {
        p.push_str(&format!(
            "\n\nPREVIOUS ATTEMPT: {previous}\nCRITIQUE: {critique}\nINSTRUCTION: Improve the \
             previous attempt based on the critique."
        ));
    }
    p
}
