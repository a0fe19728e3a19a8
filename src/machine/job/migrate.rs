//! Reading a job written with a state name of the earlier lifecycle (seed 001 §Migration
//! Strategy): RUNNING, REVIEW_REQUIRED, REVIEWING and PAUSED are mapped, and the mapping is
//! returned so the caller records it.

use super::{JobState, UnknownJobState};
use serde::{Deserialize, Serialize};

/// A legacy state read and what it became: to be recorded with the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Migration {
    /// The name as it was written.
    pub from: String,
    /// The state it is now.
    pub to: JobState,
    /// Why that state.
    pub why: String,
}

/// The state a manifest's `name` means: a current state as is (`None`), a legacy one mapped
/// (with its [`Migration`]). `stuck` says whether a RUNNING job has no live execution (no
/// lease holder, no process): then it needs a human, not a resumed execution.
pub fn migrate(name: &str, stuck: bool) -> Result<(JobState, Option<Migration>), UnknownJobState> {
    if let Ok(state) = name.parse::<JobState>() {
        return Ok((state, None));
    }
    let (to, why) = match name.trim().to_ascii_uppercase().as_str() {
        "RUNNING" if stuck => (
            JobState::InterventionRequired,
            "RUNNING with no live execution: stuck, a human must look",
        ),
        "RUNNING" => (JobState::Executing, "RUNNING is EXECUTING"),
        "REVIEW_REQUIRED" => (
            JobState::InterventionRequired,
            "REVIEW_REQUIRED is INTERVENTION_REQUIRED",
        ),
        "REVIEWING" => (
            JobState::InterventionRequired,
            "REVIEWING is INTERVENTION_REQUIRED (the review role is gone)",
        ),
        "PAUSED" => (JobState::Suspended, "PAUSED is SUSPENDED"),
        _ => return Err(UnknownJobState(name.to_string())),
    };
    let migration = Migration {
        from: name.to_string(),
        to,
        why: why.to_string(),
    };
    Ok((to, Some(migration)))
}
