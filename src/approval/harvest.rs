//! Where HARVESTING sends a job.

use serde::{Deserialize, Serialize};

/// What HARVESTING concluded (the policy's `approve(result, job)` hook decides between the
/// first two; a failed outcome needs a human).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Harvest {
    /// Accepted without a human (e.g. high confidence on a low-risk job).
    Success,
    /// A human must sign off.
    ApprovalRequired,
    /// Something failed or is missing; a human must fix it.
    InterventionRequired,
}
