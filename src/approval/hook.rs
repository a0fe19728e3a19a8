//! What the `approve(result, job)` hook is shown and what it answers.

use super::{Harvest, PanelVerdict, Risk};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a job's session produced, as the `approve` hook sees it (`result`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalResult {
    /// The session's final state, e.g. `"COMPLETED"` or `"FAILED"`.
    pub outcome: String,
    /// Whether the work counts as done: the session completed (its auditor said done) and,
    /// when the job has a panel, the panel passed.
    pub completed: bool,
    /// The final verdict (`done`, `retry`, `impossible`), when there was one.
    pub verdict: Option<String>,
    /// Why the session ended as it did (the verdict's or the failure's reason).
    pub reason: Option<String>,
    /// The auditors' confidence in `[0, 1]`, when they gave one.
    pub confidence: Option<f64>,
    /// `git diff --stat` of the work, as text.
    pub diff_stat: String,
    /// The files the work changed, workspace-relative.
    pub files: Vec<String>,
    /// Whether the work changed nothing.
    pub empty_diff: bool,
    /// What each auditor of a panel said.
    pub panel: Vec<PanelVerdict>,
    /// Whether the panel passed as the job aggregates it (all, majority); `None` without a
    /// panel. A panel that did not pass leaves `completed` false while `outcome` stays the
    /// session's own (`"COMPLETED"`), and `reason` carries the dissent.
    pub panel_passed: Option<bool>,
}

/// The job the result belongs to, as the `approve` hook sees it (`job`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalJob {
    /// The job id.
    pub id: String,
    /// The job's task.
    pub task: String,
    /// How much a mistake would cost; policies see `"low"`, `"medium"` or `"high"`.
    #[serde(with = "risk_name")]
    pub risk: Risk,
    /// The step this result came from (1 for the first).
    pub step: u32,
    /// How many steps the job may take in all.
    pub max_loops: u32,
    /// The job's counters by name.
    pub counters: BTreeMap<String, u32>,
    /// Retries spent so far.
    pub retries: u32,
    /// Empty diffs in a row.
    pub empty_diffs: u32,
    /// Identical audit findings in a row.
    pub same_findings: u32,
    /// After this many empty diffs or identical findings in a row the job has stopped making
    /// progress (0 = never).
    pub no_progress_limit: u32,
    /// The job's named inputs.
    pub inputs: BTreeMap<String, String>,
}

/// Where HARVESTING sends a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Accepted without a human: SUCCESS.
    Approve,
    /// A human signs off: APPROVAL_REQUIRED.
    Human,
    /// Something failed or stalled; a human must act: INTERVENTION_REQUIRED.
    Intervene,
}

impl Approval {
    /// The word a policy uses (`"approve"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Approval::Approve => "approve",
            Approval::Human => "human",
            Approval::Intervene => "intervene",
        }
    }

    /// The job machine's name for this outcome of HARVESTING.
    pub const fn harvest(self) -> Harvest {
        match self {
            Approval::Approve => Harvest::Success,
            Approval::Human => Harvest::ApprovalRequired,
            Approval::Intervene => Harvest::InterventionRequired,
        }
    }

    /// The word a policy answered (any case), if it is one.
    pub(crate) fn from_name(name: &str) -> Option<Approval> {
        match name.trim().to_ascii_lowercase().as_str() {
            "approve" => Some(Approval::Approve),
            "human" => Some(Approval::Human),
            "intervene" => Some(Approval::Intervene),
            _ => None,
        }
    }
}

/// What the `approve` hook (or the built-in rule) concluded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApproveDecision {
    /// Approve, human or intervene.
    pub approval: Approval,
    /// Why, for the job's transition record.
    pub reason: Option<String>,
}

/// `risk` as policies spell it (`"low"`), so a test case's `job` reads like the hook's.
mod risk_name {
    use super::Risk;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(risk: &Risk, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(risk.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Risk, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}
