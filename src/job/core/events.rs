//! What the job core is told and what it asks for: the [`JobEvent`]s — what the runner's async
//! loop found ([`RunnerEvent`]) or a human's verb — and the [`JobEffect`]s
//! [`crate::job::step::Step::step`] returns to be carried out, with the facts they carry (a
//! session's end, a harvest's findings, a judgement).

use crate::job::decision::JobDecision;
use crate::job::record::{ArtifactVersion, AuditEntry, Job, PanelVerdict, Transition, Workspace};
use crate::job::verbs::{VerbContext, VerbError};
use crate::job::{JobState, JobTrigger};
use crate::machine::SessionState;
use std::time::Duration;

/// How a session inside EXECUTING ended, as the runner read it from the session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEnd {
    /// The session.
    pub session: String,
    /// How it ended: its final state, that the engine broke under it, or that it never
    /// started.
    pub outcome: SessionOutcome,
    /// Why it ended.
    pub reason: Option<String>,
    /// The last verdict's word (`done`, `retry`, `impossible`).
    pub verdict: Option<String>,
    /// The last verdict's confidence.
    pub confidence: Option<f64>,
    /// The last verdict's findings (its open criteria), for no-progress detection.
    pub findings: Vec<String>,
    /// The worker's final message.
    pub final_message: String,
}

impl SessionEnd {
    /// The session completed: its auditor said done and the policy agreed.
    pub fn completed(&self) -> bool {
        self.outcome == SessionOutcome::Ended(SessionState::Completed)
    }

    /// The run did not end on its own merits — the engine broke under it, it was interrupted
    /// (paused), or it stopped short of a final state: worth another try after a backoff,
    /// not a human's attention.
    pub fn transient(&self) -> bool {
        match self.outcome {
            SessionOutcome::Broke(_) => true,
            SessionOutcome::Ended(s) => s == SessionState::Interrupted || !s.is_terminal(),
            SessionOutcome::NotStarted => false,
        }
    }
}

/// How a job's session ended, as the job sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionOutcome {
    /// It ran and rests in this state (`COMPLETED`, `FAILED`, `REJECTED`, `INTERRUPTED`, …).
    Ended(SessionState),
    /// The engine failed under it (an I/O error, a journal it could not write) while it was
    /// in this state.
    Broke(SessionState),
    /// It could not be made or started (a bad player, a policy that does not load).
    NotStarted,
}

impl std::fmt::Display for SessionOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionOutcome::Ended(state) | SessionOutcome::Broke(state) => {
                f.write_str(state.as_str())
            }
            SessionOutcome::NotStarted => f.write_str("NOT_STARTED"),
        }
    }
}

/// What recovery found of the session a failed execution left.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Found {
    /// No session was recorded, or it never reached the disk: start afresh.
    Nothing,
    /// The session, as it rests now (its end, should it have ended before its runner could
    /// say so).
    Session(SessionEnd),
    /// It is not on this machine, but the store holds its journal: it ran on another
    /// machine, whose runner stopped (the conversation stayed there). A fresh session starts
    /// with what the store holds.
    Elsewhere {
        /// The session.
        session: String,
        /// The runner that ran it.
        runner: String,
        /// What the session's worker last said, as its journal in the store has it.
        account: String,
        /// This machine's workspace for the job, made from the job's branch as the other
        /// machine pushed it, when the recorded workspace is the other machine's; `None` when
        /// the recorded one serves (a source every machine reaches at one path).
        workspace: Option<crate::job::record::Workspace>,
    },
    /// It is there but cannot be read.
    Unreadable {
        /// Why.
        reason: String,
    },
}

/// What the workspace harvest found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarvestFacts {
    /// The commit made on the job's branch, if anything was new.
    pub commit: Option<String>,
    /// SHA-256 of the diff against the base.
    pub diff_hash: String,
    /// The diff's summary.
    pub diff_stat: String,
    /// Files changed.
    pub files: Vec<String>,
    /// Nothing changed since the base.
    pub empty: bool,
}

/// What happened, as the runner tells the core.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunnerEvent {
    /// The runner claimed a step. `reclaimed`: the job was mid-step under a lease that
    /// expired — its runner died.
    Claimed {
        /// The previous holder's lease expired.
        reclaimed: bool,
    },
    /// The workspace is ready.
    Provisioned(Workspace),
    /// The workspace could not be made.
    ProvisionFailed {
        /// Why.
        reason: String,
        /// Worth another try (an I/O hiccup, a lock held a moment), not a bad spec.
        transient: bool,
    },
    /// The session of an [`JobEffect::Execute`] is made (or opened to resume) and ready to
    /// run: recorded before it runs, so that a runner dying now leaves it to recover.
    SessionMade {
        /// Its id.
        session: String,
    },
    /// The session inside EXECUTING ended (or, reclaimed in HARVESTING, was read again).
    SessionEnded(SessionEnd),
    /// Recovery looked at what the failed execution left.
    Inspected(Found),
    /// The workspace's changes are committed and measured.
    Harvested(HarvestFacts),
    /// The harvest itself failed (git refused).
    HarvestFailed {
        /// Why.
        reason: String,
        /// The machine ran out of room (the disk or a quota is full), not the job out of luck:
        /// nothing is wrong with its work, and a harvest goes through once there is room.
        out_of_space: bool,
    },
    /// The panel of auditors answered, each.
    Audited(Vec<PanelVerdict>),
}

impl RunnerEvent {
    /// The event's name, for a report (`session ended`, `audited`, …).
    pub fn name(&self) -> &'static str {
        match self {
            RunnerEvent::Claimed { .. } => "claimed",
            RunnerEvent::Provisioned(_) => "provisioned",
            RunnerEvent::ProvisionFailed { .. } => "provision failed",
            RunnerEvent::SessionMade { .. } => "session made",
            RunnerEvent::SessionEnded(_) => "session ended",
            RunnerEvent::Inspected(_) => "inspected",
            RunnerEvent::Harvested(_) => "harvested",
            RunnerEvent::HarvestFailed { .. } => "harvest failed",
            RunnerEvent::Audited(_) => "audited",
        }
    }
}

/// What the job core is told: what a runner found, or a human's verb.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum JobEvent {
    /// What the runner's loop found, mid-step.
    Runner(RunnerEvent),
    /// A human's verb (`approve`, `reject`, `cancel`…), with who gives it and the facts worth
    /// keeping with it.
    Verb {
        /// The verb.
        verb: JobTrigger,
        /// Who, and what the verb needs (a reject's feedback).
        cx: VerbContext,
    },
    /// The git work a `land` verb asked for ([`JobEffect::Land`]) is done: how it ended.
    Landed {
        /// Landed, or why not.
        outcome: crate::job::land::LandOutcome,
        /// Who landed it.
        cx: VerbContext,
    },
}

impl From<RunnerEvent> for JobEvent {
    fn from(e: RunnerEvent) -> JobEvent {
        JobEvent::Runner(e)
    }
}

impl JobEvent {
    /// The event's name, for a report (`session ended`, `approve`, …).
    pub fn name(&self) -> &'static str {
        match self {
            JobEvent::Runner(e) => e.name(),
            JobEvent::Verb { verb, .. } => verb.name(),
            JobEvent::Landed { .. } => "landed",
        }
    }
}

/// Why the job core took no event: the job's state does not expect it, or a verb does not
/// apply. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// A runner's event the job's state does not expect (a bug of the runner, or a stale
    /// event): said, never dropped quietly.
    #[error("the job core did not expect \"{event}\" in {state}")]
    Unexpected {
        /// The event's name.
        event: &'static str,
        /// Where the job was.
        state: JobState,
    },
    /// A human's verb that does not apply (the state does not allow it, a reject without
    /// feedback).
    #[error(transparent)]
    Verb(#[from] VerbError),
}

/// What a human's verb writes, at once: the job (as the core left it), the move and its audit
/// entry — only if the job is still in `expected` and no runner holds it, unless `revoke` (a
/// cancel mid-step takes the job from its runner: the lease is revoked).
#[derive(Debug, Clone, PartialEq)]
pub struct VerbWrite {
    /// The state the verb was judged in.
    pub expected: JobState,
    /// The move; `None` for a verb that records without moving (a SUCCESS job landed).
    pub transition: Option<Transition>,
    /// The audit entry.
    pub audit: AuditEntry,
    /// Revoke a runner's lease.
    pub revoke: bool,
}

/// What the runner is to do, in order.
#[derive(Debug, Clone, PartialEq)]
// A handful per step, each moved once: boxing would buy nothing measurable.
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum JobEffect {
    /// Write the job as it stands at this move (and the transition that moved it) under the
    /// lease; a resting state releases it. Each save carries its own copy: a step that moves
    /// twice at once (RECOVERING, then INTERVENTION_REQUIRED) journals each state in turn.
    Save {
        /// The job as of this move.
        job: Box<Job>,
        /// The move, when there was one.
        transition: Option<Transition>,
    },
    /// Make (or find again) the workspace, after waiting `after`.
    Provision {
        /// Backoff before trying.
        after: Duration,
    },
    /// Make the session — a new one with this prompt, or open `resume` — and answer
    /// `SessionMade` (or `SessionEnded` when it cannot be made).
    Execute {
        /// The worker's first prompt.
        prompt: String,
        /// A session to continue instead.
        resume: Option<String>,
    },
    /// Run the session `SessionMade` named to its end: answer `SessionEnded`.
    RunSession,
    /// Look at what a failed execution left (kill what its session left running, read how
    /// the session rests), after waiting `after`; answer `Inspected`.
    Recover {
        /// The session that was running.
        session: Option<String>,
        /// Backoff before trying.
        after: Duration,
    },
    /// Read how a session ended (a reclaimed HARVESTING has lost it): answer `SessionEnded`.
    ReadSession(String),
    /// Commit and measure the workspace's changes: answer `Harvested` or `HarvestFailed`.
    Harvest {
        /// The commit message.
        message: String,
    },
    /// Run these auditors in parallel on the harvested work: answer `Audited`.
    Audit(Vec<String>),
    /// Append this artifact version.
    AddArtifact(ArtifactVersion),
    /// Record this judgement of the policy (before the move it leads to is saved).
    Decided(JobDecision),
    /// A human's verb: write the job, the transition and the audit entry at once.
    Decide(VerbWrite),
    /// `land` is allowed: land the job's work in its source (rebase, fast-forward or push, or
    /// copy back) and answer [`JobEvent::Landed`].
    Land,
    /// The step is over: the job rests.
    Done,
    /// Stop the step where it is, writing nothing: the job stays in its transient state
    /// under this runner's lease, which lapses, and the next runner's claim recovers it from
    /// there. For a failure of the machine, not of the job (a full disk), when nothing can be
    /// written and a human has nothing to fix in the job. The runner reports it as a failure.
    Abandon {
        /// Why, for the runner's report.
        reason: String,
    },
}
