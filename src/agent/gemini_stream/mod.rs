//! Gemini CLI `-p --output-format stream-json`: `init`, `message` (role, content, `delta`),
//! `tool_use`, `tool_result`, `error` and the final `result` (status, stats).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::agent::line::{Decoded, decode, json_answer, unknown, value_text};
use crate::agent::{AgentEvent, ErrorKind, LineParser};

/// Parser for Gemini CLI's stream-json output.
///
/// Gemini names no messages, so the parser numbers the model's responses (`gemini-1`, …): a
/// new one begins after the user's message or a tool result. The final answer is the
/// concatenation of the assistant's text (the agents README), kept until `result`.
#[derive(Debug, Default)]
pub struct GeminiParser {
    /// The number of the model response under way (0: none yet).
    response: u32,
    /// The id of the response under way, made once per response rather than per delta.
    response_id: Option<String>,
    /// The next assistant text starts a new response.
    new_response: bool,
    /// All assistant text so far: the run's answer.
    answer: String,
}

impl LineParser for GeminiParser {
    fn feed(&mut self, line: &[u8], out: &mut Vec<AgentEvent>) {
        let l: Line = match decode(line) {
            Decoded::Line(l) => l,
            Decoded::Blank => return,
            Decoded::Fallback(ev) => return out.push(ev),
        };
        match l.kind {
            LineKind::Init => match l.session_id {
                Some(id) => out.push(AgentEvent::SessionStarted {
                    session_id: id.into_owned(),
                    model: l.model.map(Cow::into_owned),
                    tools: Vec::new(),
                    cwd: None,
                    version: None,
                    transcript: None,
                }),
                None => out.push(unknown(line.trim_ascii())),
            },
            LineKind::Message => {
                let text = l.content.as_ref().map(value_text).unwrap_or_default();
                if l.role.as_deref() == Some("assistant") {
                    self.answer.push_str(&text);
                    out.push(AgentEvent::AssistantText {
                        message_id: Some(self.message_id().to_owned()),
                        index: 0,
                        text,
                        partial: l.delta.unwrap_or(false),
                    });
                } else {
                    self.new_response = true;
                    out.push(AgentEvent::UserMessage { text });
                }
            }
            LineKind::ToolUse => out.push(AgentEvent::ToolCall {
                id: l.tool_id.map(Cow::into_owned).unwrap_or_default(),
                name: l.tool_name.map(Cow::into_owned).unwrap_or_default(),
                input: l.parameters.unwrap_or(Value::Null),
                message_id: Some(self.message_id().to_owned()),
            }),
            LineKind::ToolResult => {
                self.new_response = true;
                let failed = l.status.as_deref() != Some("success");
                let content = match (&l.output, &l.error) {
                    (Some(o), _) if !o.is_null() => value_text(o),
                    (_, Some(e)) => e.get("message").map(value_text).unwrap_or_default(),
                    _ => String::new(),
                };
                out.push(AgentEvent::ToolResult {
                    tool_call_id: l.tool_id.map(Cow::into_owned).unwrap_or_default(),
                    content,
                    is_error: failed,
                });
            }
            LineKind::Error => {
                let message = l.message.map(Cow::into_owned).unwrap_or_default();
                if l.severity.as_deref() == Some("warning") {
                    out.push(AgentEvent::Warning { message });
                } else {
                    out.push(AgentEvent::Error {
                        kind: ErrorKind::from_text(&message),
                        status: None,
                        message,
                    });
                }
            }
            LineKind::Result => self.result(l, out),
            LineKind::Other => out.push(unknown(line.trim_ascii())),
        }
    }
}

impl GeminiParser {
    /// The id of the model response the next assistant event belongs to.
    fn message_id(&mut self) -> &str {
        if self.new_response || self.response_id.is_none() {
            self.response += 1;
            self.new_response = false;
            self.response_id = Some(format!("gemini-{}", self.response));
        }
        self.response_id.as_deref().expect("set above")
    }

    fn result(&mut self, l: Line, out: &mut Vec<AgentEvent>) {
        let stats = l.stats.unwrap_or(Value::Null);
        let count = |k: &str| stats.get(k).and_then(Value::as_u64);
        out.push(AgentEvent::Usage {
            input_tokens: count("input_tokens"),
            output_tokens: count("output_tokens"),
            cached_input_tokens: count("cached"),
            cost_usd: None,
            turns: None,
        });
        let success = l.status.as_deref() == Some("success");
        if !success {
            let error = l.error.unwrap_or(Value::Null);
            let message = error
                .get("message")
                .map(value_text)
                .unwrap_or_else(|| "gemini run failed".to_owned());
            let code = error.get("type").map(value_text).unwrap_or_default();
            let kind = match ErrorKind::from_text(&code) {
                ErrorKind::Other => ErrorKind::from_text(&message),
                kind => kind,
            };
            out.push(AgentEvent::Error {
                kind,
                status: error
                    .get("code")
                    .and_then(Value::as_u64)
                    .and_then(|c| u16::try_from(c).ok()),
                message,
            });
        }
        let answer = std::mem::take(&mut self.answer);
        let text = (!answer.is_empty()).then_some(answer);
        out.push(AgentEvent::Final {
            success,
            structured_output: text.as_deref().and_then(json_answer),
            text,
            permission_denials: Vec::new(),
        });
        self.new_response = true;
    }
}

/// A line's `type`, dispatched on; a type this version does not know is [`LineKind::Other`],
/// kept as [`AgentEvent::Unknown`].
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum LineKind {
    Init,
    Message,
    ToolUse,
    ToolResult,
    Error,
    Result,
    #[serde(other)]
    Other,
}

/// A line: its type beside every field any type uses (borrowed where it can be).
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: LineKind,
    #[serde(default, borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    delta: Option<bool>,
    #[serde(default, borrow)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_id: Option<Cow<'a, str>>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, borrow)]
    severity: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default)]
    stats: Option<Value>,
}

/// The reader for one run (the registry's `Protocol::Gemini`): it only listens.
pub(crate) fn driver(_: crate::agent::DriverSetup) -> Box<dyn crate::agent::Driver> {
    Box::new(crate::agent::driver::Listen(GeminiParser::default()))
}

#[cfg(test)]
mod tests;
