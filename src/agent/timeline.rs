//! A run assembled from its events by message id and tool call id, whatever their order.

use std::collections::HashMap;

use serde_json::Value;

use super::AgentEvent;
use super::entries::{Block, BlockKind, ErrorSeen, FinalResult, Message, ToolEntry, UsageTotals};
use super::run_state::RunState;

/// An agent's runs assembled from their [`AgentEvent`]s.
///
/// Messages are keyed by message id and tool calls by call id, so any order works: a delta
/// before its `message_start` creates the message, a result before its call creates the call,
/// a whole block after its deltas replaces them (its text appears once). Deltas that name no
/// message build one unnamed message, which the next `message_start` adopts.
#[derive(Debug)]
pub struct Timeline {
    session_id: Option<String>,
    messages: Vec<Message>,
    by_id: HashMap<String, usize>,
    /// The message built from id-less deltas, waiting for its `message_start`.
    unnamed: Option<usize>,
    tools: Vec<ToolEntry>,
    tool_by_id: HashMap<String, usize>,
    /// Messages the agent dropped after streaming part of them ([`AgentEvent::MessageDiscarded`]),
    /// with why, in order: removed from `messages`, and kept out if a late fragment names them.
    discarded: Vec<(String, String)>,
    usage: UsageTotals,
    errors: Vec<ErrorSeen>,
    final_result: Option<FinalResult>,
    state: RunState,
    runs: u32,
    interrupt_requested: bool,
    last_was_retry: bool,
    unknown: u64,
    events: u64,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new()
    }
}

impl Timeline {
    /// An empty timeline whose first run is queued.
    pub fn new() -> Timeline {
        Timeline {
            session_id: None,
            messages: Vec::new(),
            by_id: HashMap::new(),
            unnamed: None,
            tools: Vec::new(),
            tool_by_id: HashMap::new(),
            discarded: Vec::new(),
            usage: UsageTotals::default(),
            errors: Vec::new(),
            final_result: None,
            state: RunState::Queued,
            runs: 1,
            interrupt_requested: false,
            last_was_retry: false,
            unknown: 0,
            events: 0,
        }
    }

    /// Starts the next run (a new user turn on a long-lived agent): queued, no final result,
    /// no interrupt asked. Messages, tools, usage and errors are kept. Returns the run's number.
    pub fn begin_run(&mut self) -> u32 {
        self.runs += 1;
        self.state = RunState::Queued;
        self.final_result = None;
        self.interrupt_requested = false;
        self.last_was_retry = false;
        self.runs
    }

    /// Records that the executor asked the agent to stop: the run's end, whatever the agent
    /// reports (Claude answers a SIGTERM during a tool with a `success` result), is
    /// [`RunState::Interrupted`].
    pub fn request_interrupt(&mut self) {
        self.interrupt_requested = true;
    }

    /// The agent's stream ended. A run still going ends interrupted if a stop was asked for,
    /// in error otherwise (the agent died without a result).
    pub fn end_of_stream(&mut self) {
        if !self.state.is_terminal() {
            self.state = if self.interrupt_requested {
                RunState::Interrupted
            } else {
                RunState::Error
            };
        }
    }

    /// Applies one event.
    pub fn apply(&mut self, event: &AgentEvent) {
        self.events += 1;
        self.advance(event);
        if event.is_progress() {
            self.last_was_retry = false;
        }
        match event {
            AgentEvent::SessionStarted { session_id, .. } => {
                self.session_id = Some(session_id.clone());
            }
            AgentEvent::MessageStarted { message_id, model } if !self.is_discarded(message_id) => {
                let at = self.start_message(message_id);
                let message = &mut self.messages[at];
                message.started = true;
                if model.is_some() {
                    message.model.clone_from(model);
                }
            }
            AgentEvent::AssistantText {
                message_id,
                index,
                text,
                partial,
            } => self.block(
                message_id.as_deref(),
                *index,
                BlockKind::Text,
                text,
                *partial,
            ),
            AgentEvent::Reasoning {
                message_id,
                index,
                text,
                partial,
            } => self.block(
                message_id.as_deref(),
                *index,
                BlockKind::Reasoning,
                text,
                *partial,
            ),
            AgentEvent::ToolCall {
                id,
                name,
                input,
                message_id,
            } => {
                // A message that only calls tools is a message all the same (the transcript
                // has it): it gets its entry, with no text blocks.
                if let Some(mid) = message_id.as_deref().filter(|m| !self.is_discarded(m)) {
                    self.message_at(Some(mid));
                }
                let tool = self.tool(id);
                tool.name = Some(name.clone());
                tool.input = input.clone();
                if message_id.is_some() {
                    tool.message_id.clone_from(message_id);
                }
            }
            AgentEvent::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => {
                let tool = self.tool(tool_call_id);
                tool.result = Some(content.clone());
                tool.is_error = *is_error;
            }
            AgentEvent::MessageStopped {
                message_id,
                stop_reason,
            } => {
                let at = match message_id {
                    Some(id) if self.is_discarded(id) => None,
                    Some(id) => Some(self.message_at(Some(id))),
                    None => self
                        .unnamed
                        .or_else(|| self.messages.iter().rposition(|m| !m.stopped)),
                };
                if let Some(at) = at {
                    let message = &mut self.messages[at];
                    message.stopped = true;
                    message.stop_reason.clone_from(stop_reason);
                    if self.unnamed == Some(at) {
                        self.unnamed = None;
                    }
                }
            }
            AgentEvent::Usage {
                input_tokens,
                output_tokens,
                cached_input_tokens,
                cost_usd,
                turns,
            } => {
                let u = &mut self.usage;
                u.input_tokens += input_tokens.unwrap_or(0);
                u.output_tokens += output_tokens.unwrap_or(0);
                u.cached_input_tokens += cached_input_tokens.unwrap_or(0);
                if let Some(cost) = cost_usd {
                    u.cost_usd = Some(u.cost_usd.unwrap_or(0.0) + cost);
                }
                u.turns += turns.unwrap_or(0);
            }
            AgentEvent::RetryNotice { .. } => self.last_was_retry = true,
            AgentEvent::Error {
                kind,
                status,
                message,
            } => self.errors.push(ErrorSeen {
                kind: *kind,
                status: *status,
                message: message.clone(),
            }),
            AgentEvent::Final {
                success,
                text,
                structured_output,
                permission_denials,
            } => {
                self.final_result = Some(FinalResult {
                    success: *success,
                    text: text.clone(),
                    structured_output: structured_output.clone(),
                    permission_denials: permission_denials.clone(),
                });
            }
            AgentEvent::Unknown { .. } | AgentEvent::Malformed { .. } => self.unknown += 1,
            AgentEvent::MessageDiscarded { message_id, reason } => self.discard(message_id, reason),
            // A turn cut short by an interrupt or a preempting message ends interrupted,
            // whatever its result says.
            AgentEvent::TurnInfo { interrupted, .. } => self.interrupt_requested |= *interrupted,
            AgentEvent::TurnStarted
            | AgentEvent::MessageStarted { .. }
            | AgentEvent::TaskStarted { .. }
            | AgentEvent::TaskBackgrounded { .. }
            | AgentEvent::TaskEnded { .. }
            | AgentEvent::TaskNotified { .. }
            | AgentEvent::MessageTaken { .. }
            | AgentEvent::MessageRefused { .. }
            | AgentEvent::Warning { .. }
            | AgentEvent::UserMessage { .. }
            | AgentEvent::PermissionRequest { .. } => {}
        }
    }

    /// Moves the run's lifecycle for `event`. Model output after the run ended starts a new
    /// run (an agent acting on its own, e.g. a background task waking up): nothing is dropped
    /// for arriving "late".
    fn advance(&mut self, event: &AgentEvent) {
        use RunState::*;
        let next = match event {
            AgentEvent::MessageStarted { .. }
            | AgentEvent::AssistantText { .. }
            | AgentEvent::Reasoning { .. }
            | AgentEvent::ToolCall { .. }
            | AgentEvent::TurnStarted => {
                if self.state.is_terminal() {
                    self.begin_run();
                }
                match event {
                    AgentEvent::TurnStarted => AwaitingResponse,
                    _ => Streaming,
                }
            }
            AgentEvent::SessionStarted { .. }
            | AgentEvent::ToolResult { .. }
            | AgentEvent::UserMessage { .. }
            | AgentEvent::RetryNotice { .. } => AwaitingResponse,
            AgentEvent::MessageStopped { stop_reason, .. } => match stop_reason.as_deref() {
                Some("tool_use") | Some("pause_turn") | None => AwaitingResponse,
                Some(_) => Finalizing,
            },
            AgentEvent::Final { success, .. } => {
                if self.interrupt_requested {
                    Interrupted
                } else if *success {
                    Completed
                } else {
                    Error
                }
            }
            _ => return,
        };
        if !self.state.is_terminal() {
            self.state = next;
        }
    }

    /// The message `id` names, made if new; `None` means the unnamed one.
    fn message_at(&mut self, id: Option<&str>) -> usize {
        match id {
            Some(id) => match self.by_id.get(id) {
                Some(&at) => at,
                None => self.push_message(id.to_owned()),
            },
            None => match self.unnamed {
                Some(at) => at,
                None => {
                    let at = self.push_message(String::new());
                    self.by_id.remove("");
                    self.unnamed = Some(at);
                    at
                }
            },
        }
    }

    /// The message a `message_start` for `id` describes: known already, or the unnamed one
    /// (its deltas came first), or new.
    fn start_message(&mut self, id: &str) -> usize {
        if let Some(&at) = self.by_id.get(id) {
            return at;
        }
        if let Some(at) = self.unnamed.take() {
            self.messages[at].id = id.to_owned();
            self.by_id.insert(id.to_owned(), at);
            return at;
        }
        self.push_message(id.to_owned())
    }

    fn push_message(&mut self, id: String) -> usize {
        let at = self.messages.len();
        self.by_id.insert(id.clone(), at);
        self.messages.push(Message::new(id));
        at
    }

    fn block(&mut self, id: Option<&str>, index: u32, kind: BlockKind, text: &str, partial: bool) {
        if id.is_some_and(|id| self.is_discarded(id)) {
            return;
        }
        let at = self.message_at(id);
        let block = self.messages[at].blocks.entry(index).or_insert(Block {
            kind,
            text: String::new(),
            complete: false,
        });
        if !partial {
            // The whole block: it replaces whatever deltas said, so the text appears once.
            block.text.clear();
            block.text.push_str(text);
            block.complete = true;
        } else if !block.complete {
            block.text.push_str(text);
        }
    }

    /// Drops message `id`, which the agent discarded: it was never said, so it is neither in
    /// [`Timeline::messages`] nor the last message (the answer when no final text comes).
    fn discard(&mut self, id: &str, reason: &str) {
        if self.is_discarded(id) {
            return;
        }
        self.discarded.push((id.to_owned(), reason.to_owned()));
        let Some(at) = self.by_id.remove(id) else {
            return;
        };
        self.messages.remove(at);
        for i in self.by_id.values_mut() {
            if *i > at {
                *i -= 1;
            }
        }
        self.unnamed = match self.unnamed {
            Some(u) if u == at => None,
            Some(u) if u > at => Some(u - 1),
            u => u,
        };
    }

    fn is_discarded(&self, id: &str) -> bool {
        // Few messages are ever discarded (a steer, a cancel): a scan is cheaper than a set.
        self.discarded.iter().any(|(d, _)| d == id)
    }

    fn tool(&mut self, id: &str) -> &mut ToolEntry {
        let at = match self.tool_by_id.get(id) {
            Some(&at) => at,
            None => {
                let at = self.tools.len();
                self.tool_by_id.insert(id.to_owned(), at);
                self.tools.push(ToolEntry {
                    id: id.to_owned(),
                    name: None,
                    input: Value::Null,
                    message_id: None,
                    result: None,
                    is_error: false,
                });
                at
            }
        };
        &mut self.tools[at]
    }

    /// The agent's own session id (what `--resume` takes), once reported.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Where the current run stands.
    pub fn state(&self) -> RunState {
        self.state
    }

    /// How many runs this timeline has seen (the first counts from the start).
    pub fn runs(&self) -> u32 {
        self.runs
    }

    /// Every assistant message, in the order each was first heard of.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The message with this id.
    pub fn message(&self, id: &str) -> Option<&Message> {
        self.by_id.get(id).map(|&at| &self.messages[at])
    }

    /// The last message that has any text: what the agent last said.
    pub fn last_assistant_message(&self) -> Option<&Message> {
        self.messages.iter().rev().find(|m| m.has_text())
    }

    /// The messages the agent streamed in part and then discarded, with why, in order.
    pub fn discarded(&self) -> &[(String, String)] {
        &self.discarded
    }

    /// Every tool call, in the order each was first heard of.
    pub fn tools(&self) -> &[ToolEntry] {
        &self.tools
    }

    /// The tool call with this id.
    pub fn tool_call(&self, id: &str) -> Option<&ToolEntry> {
        self.tool_by_id.get(id).map(|&at| &self.tools[at])
    }

    /// The latest run's final result, once it came.
    pub fn final_result(&self) -> Option<&FinalResult> {
        self.final_result.as_ref()
    }

    /// The latest run's final answer text.
    pub fn final_text(&self) -> Option<&str> {
        self.final_result.as_ref()?.text.as_deref()
    }

    /// The latest run's structured answer.
    pub fn structured_output(&self) -> Option<&Value> {
        self.final_result.as_ref()?.structured_output.as_ref()
    }

    /// Usage summed over every report.
    pub fn usage(&self) -> &UsageTotals {
        &self.usage
    }

    /// Every error reported, in order.
    pub fn errors(&self) -> &[ErrorSeen] {
        &self.errors
    }

    /// Whether, of the events that say anything about the model, the last was a retry notice:
    /// the agent is waiting on its provider, not working.
    pub fn last_was_retry(&self) -> bool {
        self.last_was_retry
    }

    /// How many lines were of unknown types or not JSON.
    pub fn unknown_count(&self) -> u64 {
        self.unknown
    }

    /// How many events were applied.
    pub fn event_count(&self) -> u64 {
        self.events
    }
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
