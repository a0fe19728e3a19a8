//! A job as the store keeps it: what it is to do (its spec), where it stands (state, counters,
//! workspace, feedback) and the records written about it (transitions, artifact versions,
//! audit entries). One type per thing written, written and read through that type.

use crate::job::{JobPhase, JobReason, JobState, JobTrigger};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

// Defined below the job core, since the policy's `approve` hook is shown them too; part of a
// job's record here.
pub use crate::approval::{JobLimits, PanelVerdict, PanelWord, Risk};

/// The prefix every job branch lives under.
pub const PREFIX: &str = "oneshot/";

/// How the verdicts of several auditors in one step make one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Aggregate {
    /// Every auditor must say done.
    #[default]
    All,
    /// More than half must say done.
    Majority,
}

impl FromStr for Aggregate {
    type Err = String;
    fn from_str(s: &str) -> Result<Aggregate, String> {
        match s.to_ascii_lowercase().as_str() {
            "all" => Ok(Aggregate::All),
            "majority" => Ok(Aggregate::Majority),
            _ => Err(format!("unknown aggregation {s:?}: use all or majority")),
        }
    }
}

/// What a job is to do: fixed at `create`, read by every step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The task: the worker's first prompt.
    pub task: String,
    /// The directory the job works on: a git repository (the job gets a worktree of it on a
    /// branch of its own) or a plain directory (the job works on a copy). For a job whose
    /// source is a git remote ([`JobSpec::remote`]) it is the directory inside the repository
    /// the agents work in, relative to its top (`.` for the top).
    pub source: PathBuf,
    /// The git remote the job's source is (a URL, or a path every runner can reach, such as a
    /// bare repository), as given to `job create --remote`: each runner provisions from a
    /// mirror of it and pushes the job's branch back, so the job is bound to no runner's disk.
    /// `None`: `source` is a directory of the machine that runs the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The git revision the job's branch starts from (default: `HEAD` at provisioning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The worker: an agent (`claude`, `codex:MODEL`) or, with `cmd:` in front, a command line.
    pub worker: String,
    /// The session's auditor, same forms as the worker.
    pub auditor: String,
    /// More auditors that judge the harvested result in parallel, aggregated with `aggregate`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub panel: Vec<String>,
    /// How the panel's verdicts make one.
    #[serde(default)]
    pub aggregate: Aggregate,
    /// The policy file (default: the built-in policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PathBuf>,
    /// The job's risk level.
    #[serde(default)]
    pub risk: Risk,
    /// Named inputs, given to the policy and appended to the worker's prompt.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, String>,
    /// Loop bounds.
    #[serde(default)]
    pub limits: JobLimits,
    /// Who the work is committed as: the creator's git identity (or `$ONESHOT_ACTOR`), taken at
    /// `create`, so a runner on another machine commits as the person who asked for the work.
    /// `None`: oneshot's own identity (jobs made before authors were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<Author>,
    /// Checks of the job's own (`--check`, `check` in oneshot.toml): run by every session's
    /// audit after the policy's, and again by `job land` on the rebased result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::check::Check>,
    /// The job's branch (git sources), chosen at `create`: `oneshot/<slug>-<short id>` or a
    /// namer's suggestion (see [`crate::job::naming`]). `None`: `oneshot/<job id>` (jobs made
    /// before branches were named).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// A short human name for the job, from a namer (`job create --namer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nickname: Option<String>,
}

/// A commit author.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Author {
    /// The name.
    pub name: String,
    /// The email.
    pub email: String,
}

/// Where a provisioned job works.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workspace {
    /// The directory the agents run in.
    pub path: PathBuf,
    /// The job's branch, when the source is a git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The commit the branch started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// The source's branch the job started from (`main`), where `job land` puts its work;
    /// `None` for a plain directory, a detached base, or a workspace made before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_branch: Option<String>,
}

/// What a human said when rejecting, and what it was said about: injected into the next
/// prompt as PREVIOUS ATTEMPT / CRITIQUE / INSTRUCTION (seed 003 §5.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    /// The previous attempt: its final message and diff stat.
    pub previous: String,
    /// The human's critique.
    pub critique: String,
}

/// The no-progress signals (seed 003 §1.4), visible to the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// Harvests in a row whose diff was empty.
    pub empty_diffs: u32,
    /// Verdicts in a row that named the same findings.
    pub same_findings: u32,
    /// The findings of the last verdict (its open criteria or reason).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_findings: Vec<String>,
    /// The hash of the last harvested diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_diff: Option<String>,
}

/// A job: its spec and where it stands. Leases are the store's business, not the job's.
///
/// Stored (and printed by `job show --json`) flat, as the fields `state`, `session` and
/// `feedback` beside the others: [`JobPhase`] is how the code holds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredJob", into = "StoredJob")]
pub struct Job {
    /// The job id (`job-` and 8 hex digits).
    pub id: String,
    /// What it is to do.
    pub spec: JobSpec,
    /// Where it is, with what exists there.
    pub phase: JobPhase,
    /// Why it is there (the last transition's reason).
    pub reason: Option<JobReason>,
    /// When it was created (ms since the epoch).
    pub created_ms: u64,
    /// When it last changed.
    pub updated_ms: u64,
    /// Steps started (PENDING → PROVISIONING) over the job's life.
    pub steps: u32,
    /// Steps started since creation or the last `resubmit`: what `limits.max_loops` bounds.
    pub loops: u32,
    /// Entries into each phase over the job's life, by state name (`EXECUTING`, `RECOVERING`…)
    /// and human verb (`reject`, `resubmit`): the per-phase counters of seed 003 §1.4.
    pub counters: BTreeMap<String, u32>,
    /// Transient failures retried in the current step.
    pub retries: u32,
    /// The provisioned workspace: from the first PROVISIONING on, until cleanup.
    pub workspace: Option<Workspace>,
    /// The latest session that ran, once its step moved on (the running one is the phase's).
    pub last_session: Option<String>,
    /// No-progress signals.
    pub progress: Progress,
    /// Where `job land` put the work, once it did.
    pub landed: Option<crate::job::land::Landed>,
}

/// A job as the store keeps it and `job show --json` prints it: the phase's data as the flat
/// fields `state`, `session` and `feedback`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StoredJob {
    id: String,
    spec: JobSpec,
    state: JobState,
    /// Why, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// Why, typed (absent in records older than typed reasons, and for words only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cause: Option<JobReason>,
    created_ms: u64,
    updated_ms: u64,
    steps: u32,
    #[serde(default)]
    loops: u32,
    #[serde(default)]
    counters: BTreeMap<String, u32>,
    #[serde(default)]
    retries: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workspace: Option<Workspace>,
    /// The running session, else the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    feedback: Option<Feedback>,
    #[serde(default)]
    progress: Progress,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    landed: Option<crate::job::land::Landed>,
}

impl From<StoredJob> for Job {
    fn from(s: StoredJob) -> Job {
        let phase = JobPhase::of(s.state, s.feedback, s.session.clone());
        // The session a step under way holds is the phase's; at rest it is the latest.
        let last_session = if phase.session().is_some() {
            None
        } else {
            s.session
        };
        Job {
            id: s.id,
            spec: s.spec,
            phase,
            reason: JobReason::read(s.reason, s.cause),
            created_ms: s.created_ms,
            updated_ms: s.updated_ms,
            steps: s.steps,
            loops: s.loops,
            counters: s.counters,
            retries: s.retries,
            workspace: s.workspace,
            last_session,
            progress: s.progress,
            landed: s.landed,
        }
    }
}

impl From<Job> for StoredJob {
    fn from(j: Job) -> StoredJob {
        let (reason, cause) = JobReason::stored(j.reason.as_ref());
        StoredJob {
            reason,
            cause,
            state: j.state(),
            session: j.session().map(str::to_string),
            feedback: j.phase.feedback().cloned(),
            id: j.id,
            spec: j.spec,
            created_ms: j.created_ms,
            updated_ms: j.updated_ms,
            steps: j.steps,
            loops: j.loops,
            counters: j.counters,
            retries: j.retries,
            workspace: j.workspace,
            progress: j.progress,
            landed: j.landed,
        }
    }
}

impl JobSpec {
    /// A spec for `task` on `source` with these players, everything else at its default.
    pub fn new(
        task: impl Into<String>,
        source: impl Into<PathBuf>,
        worker: impl Into<String>,
        auditor: impl Into<String>,
    ) -> JobSpec {
        JobSpec {
            task: task.into(),
            source: source.into(),
            remote: None,
            base: None,
            worker: worker.into(),
            auditor: auditor.into(),
            panel: Vec::new(),
            aggregate: Aggregate::default(),
            policy: None,
            risk: Risk::default(),
            inputs: BTreeMap::new(),
            limits: JobLimits::default(),
            author: None,
            checks: Vec::new(),
            branch: None,
            nickname: None,
        }
    }

    /// The branch job `job_id` works on: the one chosen at `create`, else `oneshot/<job id>`.
    pub fn branch_of(&self, job_id: &str) -> String {
        self.branch
            .clone()
            .unwrap_or_else(|| format!("{PREFIX}{job_id}"))
    }
}

impl Job {
    /// A job that has not run yet: `spec` in `state`, created at `now_ms`.
    pub fn new(id: impl Into<String>, spec: JobSpec, state: JobState, now_ms: u64) -> Job {
        Job {
            id: id.into(),
            spec,
            phase: JobPhase::of(state, None, None),
            reason: None,
            created_ms: now_ms,
            updated_ms: now_ms,
            steps: 0,
            loops: 0,
            counters: BTreeMap::new(),
            retries: 0,
            workspace: None,
            last_session: None,
            progress: Progress::default(),
            landed: None,
        }
    }

    /// Why it is where it is, in words.
    pub fn reason_words(&self) -> Option<String> {
        self.reason.as_ref().map(ToString::to_string)
    }

    /// Where the job is.
    pub fn state(&self) -> JobState {
        self.phase.state()
    }

    /// The session of the step under way, else the latest that ran.
    pub fn session(&self) -> Option<&str> {
        self.phase.session().or(self.last_session.as_deref())
    }

    /// A reject's feedback waiting for the next attempt's prompt.
    pub fn feedback(&self) -> Option<&Feedback> {
        self.phase.feedback()
    }

    /// Records the session a step under way runs (EXECUTING, RECOVERING, HARVESTING); a phase
    /// without one is left as it is.
    pub(crate) fn set_session(&mut self, id: String) {
        if let JobPhase::Executing { session, .. }
        | JobPhase::Recovering { session, .. }
        | JobPhase::Harvesting { session } = &mut self.phase
        {
            *session = Some(id);
        }
    }

    /// Moves the job into `to`, carrying over what exists in both phases; the session of a
    /// step that moves on becomes the latest.
    pub(crate) fn enter(&mut self, to: JobState) {
        if let Some(s) = self.phase.session() {
            self.last_session = Some(s.to_string());
        }
        let from = std::mem::replace(&mut self.phase, JobPhase::Draft);
        self.phase = from.into_state(to);
    }

    /// One more entry into `phase`.
    pub fn count(&mut self, phase: &str) -> u32 {
        let n = self.counters.entry(phase.to_string()).or_insert(0);
        *n += 1;
        *n
    }

    /// How often `phase` was entered.
    pub fn counter(&self, phase: &str) -> u32 {
        self.counters.get(phase).copied().unwrap_or(0)
    }
}

/// One move of a job, as the history keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredTransition", into = "StoredTransition")]
pub struct Transition {
    /// From.
    pub from: JobState,
    /// To.
    pub to: JobState,
    /// What moved it.
    pub trigger: JobTrigger,
    /// Why.
    pub reason: Option<JobReason>,
    /// When (ms since the epoch).
    pub at_ms: u64,
    /// Who: a runner id, or the human actor for a verb.
    pub by: String,
}

/// A transition as the store keeps it: its reason in words and typed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StoredTransition {
    from: JobState,
    to: JobState,
    #[serde(flatten)]
    trigger: JobTrigger,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cause: Option<JobReason>,
    at_ms: u64,
    by: String,
}

impl From<StoredTransition> for Transition {
    fn from(t: StoredTransition) -> Transition {
        Transition {
            from: t.from,
            to: t.to,
            trigger: t.trigger,
            reason: JobReason::read(t.reason, t.cause),
            at_ms: t.at_ms,
            by: t.by,
        }
    }
}

impl From<Transition> for StoredTransition {
    fn from(t: Transition) -> StoredTransition {
        let (reason, cause) = JobReason::stored(t.reason.as_ref());
        StoredTransition {
            from: t.from,
            to: t.to,
            trigger: t.trigger,
            reason,
            cause,
            at_ms: t.at_ms,
            by: t.by,
        }
    }
}

/// One append-only version of a job's artifacts: what one execution produced (seed 003 §4.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactVersion {
    /// 1, 2, … per job; never overwritten.
    pub version: u32,
    /// The step that produced it.
    pub step: u32,
    /// When.
    pub at_ms: u64,
    /// The session that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The session's final state (`COMPLETED`, `FAILED`…).
    pub outcome: String,
    /// The commit made on the job's branch, if anything changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// SHA-256 of the diff against the base.
    pub diff_hash: String,
    /// `git diff --stat`-like summary.
    pub diff_stat: String,
    /// The files changed.
    #[serde(default)]
    pub files: Vec<String>,
    /// The worker's final message.
    #[serde(default)]
    pub final_message: String,
    /// The verdict (the session's auditor, or the panel's aggregate) and its reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The verdict's confidence, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Each panel auditor's verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub panel: Vec<PanelVerdict>,
}

/// What an audit entry records: a human's verb, the making of a job, a workspace cleanup, a
/// message to its worker, or oneshot's own migration of a stored job (stored and shown as the lowercase word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum AuditAction {
    /// `job create`.
    Create,
    /// `job activate` (or `create --activate`).
    Activate,
    /// `job approve`.
    Approve,
    /// `job reject --feedback`.
    Reject,
    /// `job resubmit`.
    Resubmit,
    /// `job suspend`.
    Suspend,
    /// `job resume`.
    Resume,
    /// `job cancel`.
    Cancel,
    /// `job cleanup`: the workspace was removed.
    Cleanup,
    /// oneshot rewrote a legacy state (actor `oneshot`).
    Migrate,
    /// `job land`: the work landed (or did not: `result` says which, with the evidence).
    Land,
    /// `oneshot say JOB`: a human's message to the job's worker (`message`: its id, `text`:
    /// the redacted text, `now`: preempt the running turn); the runner holding the job hands
    /// it to the session it runs, else the next session's first worker prompt carries it.
    Message,
}

impl AuditAction {
    /// The word as stored (`approve`, `cleanup`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::Create => "create",
            AuditAction::Activate => "activate",
            AuditAction::Approve => "approve",
            AuditAction::Reject => "reject",
            AuditAction::Resubmit => "resubmit",
            AuditAction::Suspend => "suspend",
            AuditAction::Resume => "resume",
            AuditAction::Cancel => "cancel",
            AuditAction::Cleanup => "cleanup",
            AuditAction::Migrate => "migrate",
            AuditAction::Land => "land",
            AuditAction::Message => "message",
        }
    }

    /// The action a human's verb records; `None` for what is not a human's verb.
    pub fn of_verb(verb: crate::job::JobTrigger) -> Option<AuditAction> {
        use crate::job::JobTrigger as T;
        Some(match verb {
            T::Activate => AuditAction::Activate,
            T::Approve => AuditAction::Approve,
            T::Reject => AuditAction::Reject,
            T::Resubmit => AuditAction::Resubmit,
            T::Suspend => AuditAction::Suspend,
            T::Resume => AuditAction::Resume,
            T::Cancel => AuditAction::Cancel,
            T::Land => AuditAction::Land,
            _ => return None,
        })
    }
}

impl std::fmt::Display for AuditAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A human decision, as the audit trail keeps it (seed 003 §4.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Position in the trail (store-wide, increasing).
    #[serde(default)]
    pub seq: u64,
    /// When (ms since the epoch).
    pub at_ms: u64,
    /// Who: `$ONESHOT_ACTOR`, else the OS user.
    pub actor: String,
    /// The entity's kind (`job`).
    pub entity_type: String,
    /// The entity's id.
    pub entity_id: String,
    /// What was done.
    pub action: AuditAction,
    /// The state before and after, feedback, diff hash, policy version…
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

impl AuditEntry {
    /// An entry about job `id`, not yet in the trail (the store assigns `seq`).
    pub fn job(
        id: &str,
        action: AuditAction,
        actor: &str,
        at_ms: u64,
        metadata: serde_json::Map<String, serde_json::Value>,
    ) -> AuditEntry {
        AuditEntry {
            seq: 0,
            at_ms,
            actor: actor.to_string(),
            entity_type: "job".into(),
            entity_id: id.to_string(),
            action,
            metadata,
        }
    }
}
