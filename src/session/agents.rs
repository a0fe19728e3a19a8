//! The agents a session runs, and their own sessions: journaled in the state file so a resume
//! runs the same CLIs and the next iteration continues the worker's conversation.

use crate::agent::{AgentSpec, OwnSession, Spent};
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

/// What the end of an agent's run tells the session, queued as its events in the order the
/// core takes them (what was reconciled, the agent's session if only now seen, its usage, its
/// failure); returns the agent's answer (raw: the caller redacts it).
pub(crate) fn hear_end(
    end: crate::agent::RunEnd,
    queue: &mut std::collections::VecDeque<super::Event>,
) -> Option<String> {
    use super::Event;
    if !end.reconciled.is_empty() {
        queue.push_back(Event::AgentReconciled {
            added: end.reconciled,
        });
    }
    if let Some(own) = end.session {
        queue.push_back(Event::AgentSession(own));
    }
    if !end.spent.is_zero() {
        queue.push_back(Event::AgentUsage(end.spent));
    }
    if let Some(f) = end.failure {
        queue.push_back(Event::AgentFailed(f));
    }
    end.answer
}
