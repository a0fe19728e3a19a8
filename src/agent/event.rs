//! The normalized event: what any agent's stream means, whichever CLI produced it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One normalized event from an agent's structured output stream.
///
/// Every protocol parser ([`super::ClaudeParser`], [`super::CodexParser`],
/// [`super::GeminiParser`]) maps its CLI's lines onto these variants; the [`super::Timeline`]
/// assembles them. Ids are the agent's own (message ids, tool call ids), so events can be routed
/// and reconciled by id whatever order they arrive in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// The agent's session began (or was resumed); its id is what `--resume` takes.
    SessionStarted {
        /// The agent's own session (Claude, Gemini) or thread (Codex) id.
        session_id: String,
        /// The model the agent reports, when it does.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The tools the agent registered (Claude lists them; the others do not).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<String>,
        /// The agent's working directory, when reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// The CLI's version, when reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// The agent's own transcript of the session, when it names it (Codex app-server).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        transcript: Option<String>,
    },
    /// A model turn began (Codex `turn.started`): a request to the model is under way.
    TurnStarted,
    /// The model began streaming a message (Claude partial `message_start`).
    MessageStarted {
        /// The message id every later block of this message carries.
        message_id: String,
        /// The model that answers, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// Assistant text: a whole content block, or a fragment of one while it streams.
    AssistantText {
        /// The message the block belongs to; `None` when the stream never named it (a delta
        /// that arrived without its `message_start`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// The block's position in its message.
        index: u32,
        /// The text (the whole block, or the fragment when `partial`).
        text: String,
        /// A fragment to append (a streaming delta) rather than the block's whole text.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        partial: bool,
    },
    /// Model reasoning ("thinking"): progress, but not the answer.
    Reasoning {
        /// The message the block belongs to, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// The block's position in its message.
        index: u32,
        /// The reasoning text (or a fragment of it when `partial`).
        text: String,
        /// A fragment to append rather than the block's whole text.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        partial: bool,
    },
    /// The model asked to run a tool.
    ToolCall {
        /// The tool call's id, which its result names.
        id: String,
        /// The tool's name as the agent calls it (`Bash`, `Write`, `command_execution`, …).
        name: String,
        /// The tool's input as the model gave it.
        input: Value,
        /// The message that carried the call, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    /// The agent asks whether a tool may run (Claude `can_use_tool`); the run waits for the
    /// answer, which the policy's `permit` hook gives.
    PermissionRequest {
        /// The id the answer must name.
        request_id: String,
        /// The tool (`Bash`, `Write`, …).
        tool: String,
        /// The tool's input.
        input: Value,
        /// The tool call this is about, when named.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
    },
    /// A tool finished.
    ToolResult {
        /// The id of the call this answers.
        tool_call_id: String,
        /// What the tool returned (its text output).
        content: String,
        /// The tool failed (or was denied).
        is_error: bool,
    },
    /// The model finished a message.
    MessageStopped {
        /// The message that finished, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// Why it stopped (`end_turn`, `tool_use`, …), when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
    },
    /// Token usage and cost as the agent reports them (per turn for Codex, per run otherwise).
    Usage {
        /// Input tokens (without cache reads).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_tokens: Option<u64>,
        /// Output tokens.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_tokens: Option<u64>,
        /// Input tokens served from the provider's cache.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cached_input_tokens: Option<u64>,
        /// Cost in US dollars, when the agent reports one (only Claude does).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// Model turns, when reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turns: Option<u32>,
    },
    /// The agent is retrying a failed model call. Not progress: an agent whose server is down
    /// emits these forever (Codex), and inactivity must not be reset by them.
    RetryNotice {
        /// Which attempt this is, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        /// How many attempts the agent will make, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_attempts: Option<u32>,
        /// The delay before the next attempt, in milliseconds, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delay_ms: Option<u64>,
        /// What failed, when it can be told.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<ErrorKind>,
        /// The HTTP status of the failed call, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// The agent's own words, when it gives some.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A non-fatal notice from the agent (Codex's "model metadata not found").
    Warning {
        /// The agent's words.
        message: String,
    },
    /// A failure reported by the agent or its provider.
    Error {
        /// What kind of failure: decides between failing fast and retrying.
        kind: ErrorKind,
        /// The provider's HTTP status, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// The agent's message.
        message: String,
    },
    /// The run's final result.
    Final {
        /// The run succeeded.
        success: bool,
        /// The final answer's text, when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// The structured answer: Claude's validated `structured_output`, or (Codex) the last
        /// message when it parses as JSON — not validated against any schema.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured_output: Option<Value>,
        /// Tool calls the agent's permission rules denied (Claude), as the agent lists them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        permission_denials: Vec<Value>,
    },
    /// A task the agent runs beside its turns began (Claude `system/task_started`): a shell
    /// started with `run_in_background`, or a long foreground tool (Claude reports those as
    /// tasks too — [`crate::agent::Turns`] tells them apart by the tool call's input).
    TaskStarted {
        /// The agent's id for the task (what `stop_task` names).
        task_id: String,
        /// The tool call that started it, when named.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
        /// The agent's description of it, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// A tool call's result says it left a task running in the background (Claude's
    /// `tool_use_result.backgroundTaskId`).
    TaskBackgrounded {
        /// The task.
        task_id: String,
        /// The tool call whose result said so.
        tool_call_id: String,
    },
    /// A task reached a final status (Claude `system/task_updated` with `completed`, `failed`
    /// or `killed`): it no longer runs.
    TaskEnded {
        /// The task.
        task_id: String,
        /// The final status as the agent names it.
        status: String,
    },
    /// The agent queued a notification about a finished task for itself (Claude
    /// `system/task_notification`): unless the task was stopped, a turn of the agent's own
    /// follows. A notification merged into a running turn never produces this line.
    TaskNotified {
        /// The task.
        task_id: String,
        /// `completed`, `failed` or `stopped`.
        status: String,
    },
    /// How the turn that the next [`AgentEvent::Final`] ends began and ended, where the
    /// protocol says (Claude's `result.origin` and `terminal_reason`).
    TurnInfo {
        /// The agent started the turn itself (a task's notification woke it), not a prompt.
        autonomous: bool,
        /// The turn was cut short by an interrupt or a preempting message (`aborted_*`).
        interrupted: bool,
    },
    /// The agent refused a message oneshot sent it mid-run (Codex answering a steer with an
    /// error other than "no active turn"): the next worker prompt carries it instead.
    MessageRefused {
        /// The message's id.
        message_id: String,
        /// The agent's words.
        reason: String,
    },
    /// The agent took in a message oneshot sent it mid-run ([`crate::agent::Say`]): Claude's
    /// `isReplay` user line carrying its uuid, Codex's accepted `turn/steer`, the ACP prompt
    /// that carried it.
    MessageTaken {
        /// The message's id (the uuid oneshot gave it).
        message_id: String,
    },
    /// An assistant message the agent streamed in part and then dropped: the model's history
    /// does not hold it, so it was never said and is never the answer (a Codex `agentMessage`
    /// with deltas but no `item/completed` by `turn/completed` — a steer or an interrupt cut
    /// its sampling; the chunks of an ACP prompt answered `cancelled`).
    MessageDiscarded {
        /// The assistant message's id, as the earlier events named it.
        message_id: String,
        /// Why: `steered`, `interrupted`, `failed` (Codex), `cancelled` (ACP).
        reason: String,
    },
    /// A user message echoed in the stream (Gemini echoes the prompt).
    UserMessage {
        /// The message's text.
        text: String,
    },
    /// A well-formed line of a type this parser does not know, kept whole.
    Unknown {
        /// The line as parsed.
        raw: Value,
    },
    /// A line that is not JSON at all.
    Malformed {
        /// The line (lossily decoded, cut at 4 KiB).
        line: String,
        /// Why it did not parse.
        error: String,
    },
}

/// How much of a malformed line is kept: enough to diagnose, bounded so a binary blob on stdout
/// does not balloon the timeline.
pub const MALFORMED_KEEP: usize = 4096;

impl AgentEvent {
    /// Whether this event shows the model making progress. Retry notices, errors, warnings and
    /// lines nobody understands do not: inactivity is measured in progress, so an agent looping
    /// on "Reconnecting..." still times out.
    pub fn is_progress(&self) -> bool {
        !matches!(
            self,
            AgentEvent::RetryNotice { .. }
                | AgentEvent::Warning { .. }
                | AgentEvent::Error { .. }
                | AgentEvent::Unknown { .. }
                | AgentEvent::Malformed { .. }
        )
    }

    /// A [`AgentEvent::Malformed`] for `line`, keeping at most [`MALFORMED_KEEP`] bytes of it.
    pub(crate) fn malformed(line: &[u8], error: impl std::fmt::Display) -> AgentEvent {
        let cut = &line[..line.len().min(MALFORMED_KEEP)];
        AgentEvent::Malformed {
            line: String::from_utf8_lossy(cut).into_owned(),
            error: error.to_string(),
        }
    }
}

/// What kind of failure an [`AgentEvent::Error`] or [`AgentEvent::RetryNotice`] reports; the
/// executor retries transient kinds and fails fast on [`ErrorKind::Auth`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bad or missing credentials (401, 403): retrying cannot help.
    Auth,
    /// Too many requests (429).
    RateLimit,
    /// The provider is overloaded (529).
    Overloaded,
    /// Another server-side failure (5xx).
    Server,
    /// The connection failed or the stream was cut.
    Network,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// The kind as written in logs and JSON (`auth`, `rate_limit`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Auth => "auth",
            ErrorKind::RateLimit => "rate_limit",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Server => "server",
            ErrorKind::Network => "network",
            ErrorKind::Other => "other",
        }
    }

    /// The kind an HTTP status means.
    pub fn from_status(status: u16) -> ErrorKind {
        match status {
            401 | 403 => ErrorKind::Auth,
            429 => ErrorKind::RateLimit,
            529 => ErrorKind::Overloaded,
            500..=599 => ErrorKind::Server,
            _ => ErrorKind::Other,
        }
    }

    /// The kind an agent's error code or message names (`authentication_failed`,
    /// `overloaded_error`, "stream disconnected", …); [`ErrorKind::Other`] when none fits.
    pub fn from_text(text: &str) -> ErrorKind {
        let t = text.to_ascii_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| t.contains(w));
        if has(&[
            "auth",
            "api key",
            "api_key",
            "unauthorized",
            "forbidden",
            "permission_error",
        ]) {
            ErrorKind::Auth
        } else if has(&["rate_limit", "rate limit", "too many requests", "quota"]) {
            ErrorKind::RateLimit
        } else if has(&["overload"]) {
            ErrorKind::Overloaded
        } else if has(&[
            "connect",
            "network",
            "disconnected",
            "timed out",
            "timeout",
            "econn",
            "socket",
        ]) {
            ErrorKind::Network
        } else if has(&["server_error", "internal", "api_error", "server error"]) {
            ErrorKind::Server
        } else {
            ErrorKind::Other
        }
    }

    /// Whether a failure of this kind may go away on its own, so retrying makes sense.
    pub fn is_transient(self) -> bool {
        !matches!(self, ErrorKind::Auth | ErrorKind::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_kinds() {
        assert_eq!(ErrorKind::from_status(401), ErrorKind::Auth);
        assert_eq!(ErrorKind::from_status(403), ErrorKind::Auth);
        assert_eq!(ErrorKind::from_status(429), ErrorKind::RateLimit);
        assert_eq!(ErrorKind::from_status(529), ErrorKind::Overloaded);
        assert_eq!(ErrorKind::from_status(500), ErrorKind::Server);
        assert_eq!(ErrorKind::from_status(400), ErrorKind::Other);
    }

    #[test]
    fn texts_map_to_kinds() {
        assert_eq!(
            ErrorKind::from_text("authentication_failed"),
            ErrorKind::Auth
        );
        assert_eq!(
            ErrorKind::from_text("overloaded_error"),
            ErrorKind::Overloaded
        );
        assert_eq!(
            ErrorKind::from_text("rate_limit_error"),
            ErrorKind::RateLimit
        );
        assert_eq!(
            ErrorKind::from_text("stream disconnected before completion"),
            ErrorKind::Network
        );
        assert_eq!(ErrorKind::from_text("api_error"), ErrorKind::Server);
        assert_eq!(ErrorKind::from_text("something odd"), ErrorKind::Other);
        assert!(ErrorKind::Overloaded.is_transient());
        assert!(!ErrorKind::Auth.is_transient());
    }

    #[test]
    fn events_round_trip_through_json() {
        let ev = AgentEvent::AssistantText {
            message_id: Some("m1".into()),
            index: 2,
            text: "hi".into(),
            partial: true,
        };
        let json = serde_json::to_string(&ev).unwrap();
        assert_eq!(
            json,
            r#"{"type":"assistant_text","message_id":"m1","index":2,"text":"hi","partial":true}"#
        );
        assert_eq!(serde_json::from_str::<AgentEvent>(&json).unwrap(), ev);
    }

    #[test]
    fn retries_and_unknowns_are_not_progress() {
        let retry = AgentEvent::RetryNotice {
            attempt: Some(1),
            max_attempts: None,
            delay_ms: None,
            kind: None,
            status: None,
            message: None,
        };
        assert!(!retry.is_progress());
        assert!(!AgentEvent::Unknown { raw: Value::Null }.is_progress());
        assert!(AgentEvent::TurnStarted.is_progress());
    }

    #[test]
    fn malformed_keeps_a_bounded_prefix() {
        let long = vec![b'x'; MALFORMED_KEEP * 2];
        let AgentEvent::Malformed { line, .. } = AgentEvent::malformed(&long, "bad") else {
            panic!("not malformed");
        };
        assert_eq!(line.len(), MALFORMED_KEEP);
    }
}
