//! Which side of the loop a process plays.

use serde::{Deserialize, Serialize};

/// The two roles of a session (env `ONESHOT_ROLE`, log field `role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Does the task.
    Worker,
    /// Judges the worker's result.
    Auditor,
}

impl Role {
    /// `"worker"` or `"auditor"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Auditor => "auditor",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
