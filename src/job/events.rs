//! What the runner and the job core tell each other: the [`RunnerEvent`]s the runner's async
//! loop turns what happened into, and the [`JobEffect`]s [`super::step::Step::step`] returns
//! for it to carry out, with the facts they carry (a session's end, a harvest's findings).

use super::record::{ArtifactVersion, PanelVerdict, Transition, Workspace};
use std::time::Duration;

/// How a session inside EXECUTING ended, as the runner read it from the session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEnd {
    /// The session.
    pub session: String,
    /// How it ended: its final state, or that it never started.
    pub outcome: SessionOutcome,
    /// The auditor said done.
    pub completed: bool,
    /// The run did not end on its own merits (the engine failed, the session was
    /// interrupted): worth another try after a backoff.
    pub transient: bool,
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

/// How a job's session ended, as the job sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionOutcome {
    /// It ran and rests in this state (`COMPLETED`, `FAILED`, `REJECTED`, `INTERRUPTED`, …).
    Ended(crate::machine::SessionState),
    /// It could not be made or started (a bad player, a policy that does not load).
    NotStarted,
}

impl std::fmt::Display for SessionOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionOutcome::Ended(state) => f.write_str(state.as_str()),
            SessionOutcome::NotStarted => f.write_str("NOT_STARTED"),
        }
    }
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
    /// The session inside EXECUTING ended (or, reclaimed in HARVESTING, was read again).
    SessionEnded(SessionEnd),
    /// Recovery checked what the failed execution left: continue with it (`resume`) or
    /// start afresh.
    Recovered {
        /// A session to resume rather than start a new one.
        resume: Option<String>,
    },
    /// Nothing can be recovered.
    RecoveryFailed {
        /// Why.
        reason: String,
    },
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
            RunnerEvent::SessionEnded(_) => "session ended",
            RunnerEvent::Recovered { .. } => "recovered",
            RunnerEvent::RecoveryFailed { .. } => "recovery failed",
            RunnerEvent::Harvested(_) => "harvested",
            RunnerEvent::HarvestFailed { .. } => "harvest failed",
            RunnerEvent::Audited(_) => "audited",
        }
    }
}

/// What the runner is to do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum JobEffect {
    /// Write the job (and this transition) under the lease; a resting state releases it.
    Save(Option<Transition>),
    /// Make (or find again) the workspace, after waiting `after`.
    Provision {
        /// Backoff before trying.
        after: Duration,
    },
    /// Run the session: a new one with this prompt, or `resume` an existing one.
    Execute {
        /// The worker's first prompt.
        prompt: String,
        /// A session to continue instead.
        resume: Option<String>,
    },
    /// Look at what a failed execution left (kill what its session left running, see whether
    /// the session can go on), after waiting `after`; answer `Recovered` or `RecoveryFailed`.
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
