//! The durable small types of a session: its history entries, the policy reference and the last
//! verdict.

use super::Reason;
use crate::machine::{SessionState, Verdict};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which policy decides, by path and content hash, and the budget it sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyRef {
    /// The policy file, absolute; `None` for the built-in policy.
    pub path: Option<PathBuf>,
    /// Its content hash (covering required modules).
    pub hash: String,
    /// How many times the policy was swapped for a changed version, plus one.
    #[serde(default = "first_generation")]
    pub generation: u32,
    /// Its `limits.budget`, when it sets one: what a dashboard draws the spending against
    /// (an older state file has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::policy::Budget>,
}

fn first_generation() -> u32 {
    1
}

/// One entry of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The state entered.
    pub state: SessionState,
    /// When, as unix milliseconds.
    pub ts: u64,
    /// Why, when the transition had a cause worth recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// The pid of the process that ran in this state, once started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// The worker iteration at the time.
    pub iteration: u32,
    /// Content hash of the policy in force.
    pub policy_hash: String,
    /// The policy generation in force.
    #[serde(default = "first_generation")]
    pub generation: u32,
}

/// The auditor's verdict as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictRecord {
    /// Done, retry or impossible.
    pub verdict: Verdict,
    /// The auditor's reason or critique.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The auditor's confidence, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// What the auditor said is still missing (its structured answer's `open_criteria`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_criteria: Vec<String>,
    /// How many verdicts in a row, this one included, named these same open criteria: a
    /// worker that does not move them is making no progress.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub open_criteria_streak: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
