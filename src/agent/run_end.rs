//! What an agent's run leaves when its stream ends — its own session, what it spent, how it
//! failed, its answer — as the agent's nouns. The session hears them as its events
//! (`crate::session`); an `ask` reads them directly; neither is the agent's business.

use serde::{Deserialize, Serialize};

/// How an agent's run ended, as its stream told: what the tap reads when the stream ends (`Tap::finish`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunEnd {
    /// Messages of the agent's transcript its stream never carried, added to the timeline
    /// (their ids).
    pub reconciled: Vec<String>,
    /// The agent's own session, if only now seen.
    pub session: Option<OwnSession>,
    /// What the run used, as reported.
    pub spent: Spent,
    /// The run's failure, as the agent reported it.
    pub failure: Option<AgentFailure>,
    /// The agent's answer (raw: the caller redacts it).
    pub answer: Option<String>,
}

/// Turns, tokens and dollars, as the agents report them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// Model turns.
    #[serde(default)]
    pub turns: u32,
    /// Tokens, input and output.
    #[serde(default)]
    pub tokens: u64,
    /// US dollars (only agents that report a cost add to it).
    #[serde(default)]
    pub usd: f64,
}

// `usd` is a sum of costs read from JSON numbers, which are finite: never NaN, so equality is
// an equivalence (the records it is part of compare with `Eq`).
impl Eq for Spent {}

impl Spent {
    /// Nothing reported yet.
    pub fn is_zero(&self) -> bool {
        *self == Spent::default()
    }

    /// Both together.
    pub fn plus(&self, other: &Spent) -> Spent {
        Spent {
            turns: self.turns.saturating_add(other.turns),
            tokens: self.tokens.saturating_add(other.tokens),
            usd: self.usd + other.usd,
        }
    }

    /// As the policy's budget check takes it.
    pub fn as_use(&self) -> crate::policy::BudgetUse {
        crate::policy::BudgetUse {
            turns: self.turns,
            tokens: self.tokens,
            usd: self.usd,
        }
    }
}

/// An agent's own session, as it named it: its id (what a later run resumes) and, when known,
/// the file it keeps its transcript in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnSession {
    /// The agent's session (Claude, Gemini) or thread (Codex) id.
    pub session_id: String,
    /// Its transcript file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
}

impl OwnSession {
    /// A session known by its id alone.
    pub fn id(session_id: impl Into<String>) -> OwnSession {
        OwnSession {
            session_id: session_id.into(),
            transcript: None,
        }
    }
}

/// A run the agent itself reported as failed (its provider refused, was overloaded, the stream
/// was cut), with the agent's own words. Aider exits 0 on such failures; this is how the session
/// still hears of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentFailure {
    /// The agent.
    pub agent: super::AgentKind,
    /// What kind of failure: authentication fails the session at once. (`error` in JSON:
    /// the records this is flattened into use `kind` for their own tag.)
    #[serde(rename = "error")]
    pub kind: super::ErrorKind,
    /// The provider's HTTP status, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The agent's message (redacted).
    pub message: String,
}

impl AgentFailure {
    /// Credentials were refused: retrying cannot help.
    pub fn is_auth(&self) -> bool {
        self.kind == super::ErrorKind::Auth
    }
}
