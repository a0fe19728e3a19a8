//! The conversation with an agent that speaks a protocol on stdin as well as stdout: Claude
//! Code's stream-json with its control requests, Codex's `app-server` (JSON-RPC) and Gemini's
//! Agent Client Protocol. A [`Driver`] is pure — it turns the agent's lines into
//! [`AgentEvent`]s and says which lines to write back (the handshake, the prompt, answers to
//! the agent's requests, an interrupt); the engine does the writing. Agents that only write
//! (`codex exec --json`, `gemini -p`, Aider) get a driver that never answers.

use super::{AgentEvent, Delivery, LineParser, Say};
use crate::process::Role;
use serde_json::Value;
use std::path::PathBuf;

/// One line for the agent's stdin, newline included.
pub type Reply = Vec<u8>;

/// What a driver needs to open its conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverSetup {
    /// The role the agent plays (an auditor's session is read-only where the protocol says so).
    pub role: Role,
    /// The agent's working directory (JSON-RPC protocols name it in their session request).
    pub cwd: PathBuf,
    /// The model the user chose, when they chose one.
    pub model: Option<String>,
    /// The agent's own earlier session to continue, when it can be continued.
    pub resume: Option<String>,
}

/// Drives one agent process's protocol. Nothing here fails or panics: lines that do not fit
/// become [`AgentEvent::Unknown`] or [`AgentEvent::Malformed`], requests it cannot answer get
/// an error reply so the agent never waits on oneshot forever.
pub trait Driver: Send {
    /// The lines that start the conversation (handshake and, or later, the prompt).
    fn open(&mut self, prompt: &str, out: &mut Vec<Reply>);

    /// One line of the agent's stdout: its events go to `events`, the lines the protocol
    /// answers with at once (the next handshake step, an error for an unknown request) to `out`.
    fn feed(&mut self, line: &[u8], events: &mut Vec<AgentEvent>, out: &mut Vec<Reply>);

    /// The answer to the permission request `request_id` (an [`AgentEvent::PermissionRequest`]
    /// this driver emitted); `None` when the protocol has no such request.
    fn permit(
        &mut self,
        request_id: &str,
        allow: bool,
        reason: Option<&str>,
        input: &Value,
    ) -> Option<Reply>;

    /// The line that asks the agent to stop its turn; `None` when the protocol cannot be asked
    /// (yet, or at all) — the process group is stopped instead.
    fn interrupt(&mut self) -> Option<Reply>;

    /// Delivers a human's message to the running agent: the lines to write go to `out`. The
    /// default — a protocol that cannot take one mid-run — leaves it for the next prompt.
    fn say(&mut self, message: &Say, out: &mut Vec<Reply>) -> Delivery {
        let _ = (message, out);
        Delivery::NextPrompt
    }

    /// Withdraws message `id`, sent but not yet taken in (the run is ending): the lines to
    /// write go to `out`; false when the protocol cannot withdraw (nothing is written).
    fn withdraw(&mut self, id: &str, out: &mut Vec<Reply>) -> bool {
        let _ = (id, out);
        false
    }

    /// The line that stops background task `task_id` (Claude's `stop_task`); `None` when the
    /// protocol has none — the process group's end stops it.
    fn stop_task(&mut self, task_id: &str) -> Option<Reply> {
        let _ = task_id;
        None
    }
}

/// A driver for a protocol that only writes: its parser, and nothing to say.
pub(crate) struct Listen<P>(pub P);

impl<P: LineParser + Send> Driver for Listen<P> {
    fn open(&mut self, _prompt: &str, _out: &mut Vec<Reply>) {}

    fn feed(&mut self, line: &[u8], events: &mut Vec<AgentEvent>, _out: &mut Vec<Reply>) {
        self.0.feed(line, events);
    }

    fn permit(&mut self, _: &str, _: bool, _: Option<&str>, _: &Value) -> Option<Reply> {
        None
    }

    fn interrupt(&mut self) -> Option<Reply> {
        None
    }
}
