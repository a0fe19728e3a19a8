//! The needs-a-human events a notification is sent for.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What happened that a human should know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NotifyKind {
    /// A job entered APPROVAL_REQUIRED: a human must approve or reject its result.
    ApprovalPending,
    /// A job entered INTERVENTION_REQUIRED: a human must fix something and resubmit.
    InterventionRequired,
    /// An agent printed nothing for its inactivity timeout and was stopped.
    AgentStalled,
    /// A session used 80 % of a `limits.budget` (turns, tokens or dollars).
    Budget80,
}

impl NotifyKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [NotifyKind; 4] = [
        NotifyKind::ApprovalPending,
        NotifyKind::InterventionRequired,
        NotifyKind::AgentStalled,
        NotifyKind::Budget80,
    ];

    /// The word a config file, a payload and the store use (`"approval_pending"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            NotifyKind::ApprovalPending => "approval_pending",
            NotifyKind::InterventionRequired => "intervention_required",
            NotifyKind::AgentStalled => "agent_stalled",
            NotifyKind::Budget80 => "budget_80",
        }
    }

    /// The kind whose word is `word`.
    pub fn from_word(word: &str) -> Option<NotifyKind> {
        NotifyKind::ALL.into_iter().find(|k| k.as_str() == word)
    }

    /// The kind a job entering `state` is notified as, if any.
    pub fn of_state(state: crate::job::JobState) -> Option<NotifyKind> {
        match state {
            crate::job::JobState::ApprovalRequired => Some(NotifyKind::ApprovalPending),
            crate::job::JobState::InterventionRequired => Some(NotifyKind::InterventionRequired),
            _ => None,
        }
    }
}

impl fmt::Display for NotifyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
