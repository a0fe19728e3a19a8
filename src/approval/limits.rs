//! How often a job may go round.

use serde::{Deserialize, Serialize};

/// Bounds on how often a job may go round (seed 003 §1.4). Retries of transient failures
/// follow the policy's `limits.retry` (attempts and backoff), as a session's do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobLimits {
    /// Steps a job may take since it was created or last resubmitted (each reject leads to
    /// one more); a step that ends past it without approval goes to INTERVENTION_REQUIRED.
    pub max_loops: u32,
    /// Harvests in a row with an empty diff, or verdicts in a row with the same findings, that
    /// count as no progress (0: never).
    pub no_progress: u32,
}

impl Default for JobLimits {
    fn default() -> Self {
        JobLimits {
            max_loops: 5,
            no_progress: 2,
        }
    }
}
