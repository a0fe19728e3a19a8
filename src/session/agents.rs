//! The agents a session runs, and their own sessions: journaled in the state file so a resume
//! runs the same CLIs and the next iteration continues the worker's conversation.

use crate::agent::AgentSpec;
use crate::process::Role;
use serde::{Deserialize, Serialize};

/// Which roles are played by agent CLIs (the others run their command line), and the agents'
/// own session ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Agents {
    /// The worker's agent, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<AgentSpec>,
    /// The auditor's agent, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auditor: Option<AgentSpec>,
    /// The worker agent's own session id (Claude session, Codex thread), journaled as soon as
    /// the agent names it: what the next iteration resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_session: Option<String>,
    /// Where the worker agent keeps its own transcript of that session (Claude's project file,
    /// Codex's rollout, Gemini's chat file): what recovery reads after a crash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_transcript: Option<String>,
    /// The last auditor agent's session id (its transcript; audits start fresh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auditor_session: Option<String>,
    /// What the agents reported using, all runs together: what `limits.budget` is checked
    /// against. The state file keeps it at its top level, among the fields a listing reads
    /// (`spent`); an older file's `agents.spent` is still read.
    #[serde(default, skip_serializing)]
    pub spent: Spent,
    /// The highest budget warning given so far (80 or 95 %), so each is given once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub budget_warned: u8,
}

fn is_zero(n: &u8) -> bool {
    *n == 0
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

impl Agents {
    /// No agent and no agent session: nothing to write.
    pub fn is_empty(&self) -> bool {
        *self == Agents::default()
    }

    /// The agent playing `role`.
    pub fn spec(&self, role: Role) -> Option<&AgentSpec> {
        match role {
            Role::Worker => self.worker.as_ref(),
            Role::Auditor => self.auditor.as_ref(),
        }
    }

    /// The agent session id last seen for `role`.
    pub fn session(&self, role: Role) -> Option<&str> {
        match role {
            Role::Worker => self.worker_session.as_deref(),
            Role::Auditor => self.auditor_session.as_deref(),
        }
    }

    /// Records `id` as `role`'s agent session; false when it was already the one recorded.
    pub(crate) fn set_session(&mut self, role: Role, own: &OwnSession) -> bool {
        let before = (self.worker_session.clone(), self.worker_transcript.clone());
        match role {
            Role::Worker => {
                self.worker_session = Some(own.session_id.clone());
                self.worker_transcript = own.transcript.clone();
                before != (self.worker_session.clone(), self.worker_transcript.clone())
            }
            Role::Auditor => {
                let changed = self.auditor_session.as_deref() != Some(own.session_id.as_str());
                self.auditor_session = Some(own.session_id.clone());
                changed
            }
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
    pub agent: crate::agent::AgentKind,
    /// What kind of failure: authentication fails the session at once. (`error` in JSON:
    /// the records this is flattened into use `kind` for their own tag.)
    #[serde(rename = "error")]
    pub kind: crate::agent::ErrorKind,
    /// The provider's HTTP status, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The agent's message (redacted).
    pub message: String,
}

impl AgentFailure {
    /// Credentials were refused: retrying cannot help.
    pub fn is_auth(&self) -> bool {
        self.kind == crate::agent::ErrorKind::Auth
    }
}
