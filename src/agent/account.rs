//! A run told as a person reads it, one entry at a time: what the agent said, which tool it ran
//! with what, how that went. The terminal of a running session, `oneshot log` and `oneshot show`
//! print these entries instead of the protocol's JSON (kilobytes a step); the run's
//! [`super::Narrative`] — what the auditor and the policy read — is their text.

use super::{AgentEvent, AgentSpec, LineParser, Protocol};
use crate::process::Role;
use serde_json::Value;
use std::collections::HashSet;

/// How much of a tool's input or result an entry's [`Entry::text`] keeps: enough to judge, not
/// a whole file.
pub const SHOWN: usize = 400;

/// One line of a run's account.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Entry {
    /// A line of what the agent said.
    Said {
        /// The line.
        text: String,
    },
    /// A tool the agent ran: its name and its input on one line (a command as its words).
    Tool {
        /// The tool's name as the agent calls it (`Bash`, `command_execution`, …).
        name: String,
        /// Its input on one line.
        input: String,
    },
    /// How a tool went, with the start of what it returned.
    Outcome {
        /// It succeeded (not failed, not denied).
        ok: bool,
        /// What it returned, trimmed (may be empty).
        text: String,
    },
    /// A failure the agent reported.
    Error {
        /// Its message.
        message: String,
    },
}

impl Entry {
    /// The entry as the narrative writes it: `$ Bash cargo test`, `  → failed: …`, `! …`, or
    /// the agent's words; tool inputs and results cut at 400 bytes, on one line.
    pub fn text(&self) -> String {
        match self {
            Entry::Said { text } => text.clone(),
            Entry::Tool { name, input } => format!("$ {name} {}", cut(input, SHOWN)),
            Entry::Outcome { ok, text } => {
                let how = if *ok { "ok" } else { "failed" };
                if text.is_empty() {
                    format!("  → {how}")
                } else {
                    format!("  → {how}: {}", cut(text, SHOWN))
                }
            }
            Entry::Error { message } => format!("! {message}"),
        }
    }

    /// The same entry with every text passed through `f` (the redactor, on its way to a
    /// terminal or a file).
    pub fn map_text(self, f: impl Fn(&str) -> String) -> Entry {
        match self {
            Entry::Said { text } => Entry::Said { text: f(&text) },
            Entry::Tool { name, input } => Entry::Tool {
                name: f(&name),
                input: f(&input),
            },
            Entry::Outcome { ok, text } => Entry::Outcome { ok, text: f(&text) },
            Entry::Error { message } => Entry::Error {
                message: f(&message),
            },
        }
    }
}

/// Turns a run's events into [`Entry`]s. Streamed text is said a line at a time as its lines
/// complete (the rest when the message or the run ends), and a message streamed in fragments is
/// not said again when its whole text follows.
#[derive(Debug, Default)]
pub struct Account {
    /// The message streaming now and its text not yet said.
    open: Option<(Option<String>, String)>,
    /// Messages whose text arrived in fragments.
    streamed: HashSet<String>,
    /// Tool calls already said: an ACP agent names a call first in its permission request, and
    /// the call itself may follow; Claude names it before asking.
    tools: HashSet<String>,
    /// Tool calls asked to run in the background (`run_in_background`), and the tasks known to
    /// run there: a long foreground tool is a task too, and is not told as one.
    background_calls: HashSet<String>,
    background_tasks: HashSet<String>,
}

impl Account {
    /// A reader for a new run.
    pub fn new() -> Account {
        Account::default()
    }

    /// Adds to `out` what `event` tells.
    pub fn apply(&mut self, event: &AgentEvent, out: &mut Vec<Entry>) {
        match event {
            AgentEvent::AssistantText {
                message_id,
                text,
                partial: true,
                ..
            } => {
                if let Some(id) = message_id {
                    self.streamed.insert(id.clone());
                }
                if self.open.as_ref().map(|(id, _)| id) != Some(message_id) {
                    self.flush(out);
                    self.open = Some((message_id.clone(), String::new()));
                }
                let Some((_, pending)) = &mut self.open else {
                    return;
                };
                pending.push_str(text);
                while let Some(nl) = pending.find('\n') {
                    let line: String = pending.drain(..=nl).collect();
                    said(&line, out);
                }
            }
            AgentEvent::AssistantText {
                message_id, text, ..
            } => {
                if message_id
                    .as_ref()
                    .is_some_and(|id| self.streamed.contains(id))
                {
                    return;
                }
                self.flush(out);
                for line in text.lines() {
                    said(line, out);
                }
            }
            AgentEvent::ToolCall {
                id, name, input, ..
            } => {
                if input.get("run_in_background").and_then(Value::as_bool) == Some(true) {
                    self.background_calls.insert(id.clone());
                }
                if !self.tools.insert(id.clone()) && !id.is_empty() {
                    return;
                }
                self.flush(out);
                out.push(Entry::Tool {
                    name: name.clone(),
                    input: compact(input),
                });
            }
            AgentEvent::PermissionRequest {
                tool,
                input,
                tool_call_id: Some(id),
                ..
            } if !self.tools.contains(id) => {
                self.tools.insert(id.clone());
                self.flush(out);
                out.push(Entry::Tool {
                    name: tool.clone(),
                    input: compact(input),
                });
            }
            AgentEvent::ToolResult {
                content, is_error, ..
            } => {
                self.flush(out);
                out.push(Entry::Outcome {
                    ok: !is_error,
                    text: content.trim().to_string(),
                });
            }
            AgentEvent::Error { message, .. } => {
                self.flush(out);
                out.push(Entry::Error {
                    message: message.clone(),
                });
            }
            AgentEvent::MessageStopped { .. } | AgentEvent::Final { .. } => self.flush(out),
            AgentEvent::TaskStarted {
                task_id,
                tool_call_id: Some(call),
                description,
            } if self.background_calls.contains(call) => {
                self.background(task_id, description.as_deref(), out)
            }
            AgentEvent::TaskBackgrounded { task_id, .. } => self.background(task_id, None, out),
            AgentEvent::TaskEnded { task_id, status } if self.background_tasks.remove(task_id) => {
                self.flush(out);
                note(&format!("background task {task_id} {status}"), out);
            }
            AgentEvent::TurnInfo {
                autonomous,
                interrupted,
            } if *autonomous || *interrupted => {
                self.flush(out);
                note(
                    match (autonomous, interrupted) {
                        (true, false) => "the agent's own turn, woken by a background task, ends",
                        (true, true) => {
                            "the agent's own turn, woken by a background task, was interrupted"
                        }
                        _ => "the turn was interrupted",
                    },
                    out,
                );
            }
            AgentEvent::MessageDiscarded { message_id, reason } => {
                // What was not said yet of it never will be; what was, is taken back.
                if self
                    .open
                    .as_ref()
                    .is_some_and(|(id, _)| id.as_deref() == Some(message_id.as_str()))
                {
                    self.open = None;
                }
                if self.streamed.contains(message_id) {
                    note(
                        &format!(
                            "the message streaming was dropped ({reason}): it is not in the \
                             agent's history"
                        ),
                        out,
                    );
                }
            }
            AgentEvent::MessageRefused { message_id, reason } => {
                self.flush(out);
                let id = message_id.get(..8).unwrap_or(message_id);
                note(
                    &format!("message {id} was refused ({reason}): the next prompt carries it"),
                    out,
                );
            }
            _ => {}
        }
    }

    /// Task `task_id` runs in the background: told once.
    fn background(&mut self, task_id: &str, description: Option<&str>, out: &mut Vec<Entry>) {
        if !self.background_tasks.insert(task_id.to_owned()) {
            return;
        }
        self.flush(out);
        let text = match description {
            Some(d) => format!("background task {task_id} started: {d}"),
            None => format!("background task {task_id} started"),
        };
        note(&text, out);
    }

    /// Says what is left of the streaming message (the run ended, or stderr came in between).
    pub fn flush(&mut self, out: &mut Vec<Entry>) {
        if let Some((_, pending)) = self.open.take() {
            said(&pending, out);
        }
    }
}

/// An agent run's stdout as recorded (the log's `activity` lines), read back into its account.
pub struct AccountReader {
    parser: Box<dyn LineParser + Send>,
    account: Account,
    events: Vec<AgentEvent>,
}

impl std::fmt::Debug for AccountReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountReader").finish_non_exhaustive()
    }
}

impl AccountReader {
    /// A reader of one run of an agent speaking `protocol`.
    pub fn new(protocol: Protocol) -> AccountReader {
        AccountReader {
            parser: protocol.parser(),
            account: Account::new(),
            events: Vec::new(),
        }
    }

    /// The reader of what `executor` (as the log names it: `claude`, `codex`, …) printed on
    /// stdout as `role`; `None` for a command, whose output is already what it said.
    pub fn for_executor(executor: &str, role: Role) -> Option<AccountReader> {
        let spec = AgentSpec::parse(executor).ok()?;
        Some(AccountReader::new(spec.protocol(role)))
    }

    /// One line of the run's stdout; its entries go to `out`.
    pub fn line(&mut self, line: &str, out: &mut Vec<Entry>) {
        self.parser.feed_str(line, &mut self.events);
        for e in self.events.drain(..) {
            self.account.apply(&e, out);
        }
    }

    /// The run ended (or something else was said in between): what is left is said.
    pub fn flush(&mut self, out: &mut Vec<Entry>) {
        self.account.flush(out);
    }
}

/// A line of the agent's words, unless it is blank.
fn said(line: &str, out: &mut Vec<Entry>) {
    let line = line.trim_end();
    if !line.trim().is_empty() {
        out.push(Entry::Said {
            text: line.to_string(),
        });
    }
}

/// A line about the run rather than by the agent (a background task, a turn of its own, a
/// dropped message), in brackets so it does not read as the agent's words.
fn note(text: &str, out: &mut Vec<Entry>) {
    out.push(Entry::Said {
        text: format!("[{text}]"),
    });
}

/// A tool input on one line: a command as its words (an ACP call's title is its command or
/// what it does), anything else as compact JSON.
fn compact(input: &Value) -> String {
    match (input.get("command"), input.get("title")) {
        (Some(Value::String(c)), _) => c.clone(),
        (Some(Value::Array(words)), _) => words
            .iter()
            .map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(" "),
        (None, Some(Value::String(t))) => t.clone(),
        _ => input.to_string(),
    }
}

/// `s` on one line (newlines shown as `⏎`), cut at `max` bytes with `…`.
pub fn cut(s: &str, max: usize) -> String {
    let one_line = s.replace('\n', "⏎");
    if one_line.len() <= max {
        return one_line;
    }
    let mut end = max;
    while !one_line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &one_line[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(id: &str, t: &str, partial: bool) -> AgentEvent {
        AgentEvent::AssistantText {
            message_id: Some(id.into()),
            index: 0,
            text: t.into(),
            partial,
        }
    }

    fn said(t: &str) -> Entry {
        Entry::Said { text: t.into() }
    }

    #[test]
    fn streamed_lines_are_said_as_they_complete() {
        let mut a = Account::new();
        let mut out = Vec::new();
        a.apply(&text("m", "first li", true), &mut out);
        assert!(out.is_empty());
        a.apply(&text("m", "ne\nsecond", true), &mut out);
        assert_eq!(out, [said("first line")]);
        a.apply(&text("m", "first line\nsecond", false), &mut out);
        a.apply(
            &AgentEvent::ToolCall {
                id: "c".into(),
                name: "Bash".into(),
                input: json!({"command": "ls -l"}),
                message_id: None,
            },
            &mut out,
        );
        assert_eq!(
            out,
            [
                said("first line"),
                said("second"),
                Entry::Tool {
                    name: "Bash".into(),
                    input: "ls -l".into()
                }
            ]
        );
        assert_eq!(out[2].text(), "$ Bash ls -l");
    }

    #[test]
    fn a_tool_first_named_in_its_permission_request_is_said_once() {
        let mut a = Account::new();
        let mut out = Vec::new();
        let ask = AgentEvent::PermissionRequest {
            request_id: "0".into(),
            tool: "run_shell_command".into(),
            input: json!({"command": "echo one"}),
            tool_call_id: Some("t1".into()),
        };
        let call = AgentEvent::ToolCall {
            id: "t1".into(),
            name: "run_shell_command".into(),
            input: json!({"command": "echo one"}),
            message_id: None,
        };
        // ACP: the request first, then maybe the call; Claude: the call, then the request.
        a.apply(&ask, &mut out);
        a.apply(&call, &mut out);
        let mut b = Account::new();
        let mut out_b = Vec::new();
        b.apply(&call, &mut out_b);
        b.apply(&ask, &mut out_b);
        let said = [Entry::Tool {
            name: "run_shell_command".into(),
            input: "echo one".into(),
        }];
        assert_eq!(out, said);
        assert_eq!(out_b, said);
    }

    #[test]
    fn background_tasks_own_turns_and_dropped_messages_are_told_in_brackets() {
        let mut a = Account::new();
        let mut out = Vec::new();
        let bash = |id: &str, background: bool| AgentEvent::ToolCall {
            id: id.into(),
            name: "Bash".into(),
            input: json!({"command": "sleep 6", "run_in_background": background}),
            message_id: None,
        };
        let started = |task: &str, call: &str| AgentEvent::TaskStarted {
            task_id: task.into(),
            tool_call_id: Some(call.into()),
            description: Some("Run scripted command".into()),
        };
        let ended = |task: &str| AgentEvent::TaskEnded {
            task_id: task.into(),
            status: "completed".into(),
        };
        for e in [
            bash("t1", true),
            started("b1", "t1"),
            AgentEvent::TaskBackgrounded {
                task_id: "b1".into(),
                tool_call_id: "t1".into(),
            },
            // A long foreground tool is a task too: not told.
            bash("t2", false),
            started("b2", "t2"),
            ended("b2"),
            AgentEvent::TurnInfo {
                autonomous: false,
                interrupted: false,
            },
            ended("b1"),
            text("m1", "Noti", true),
            AgentEvent::MessageDiscarded {
                message_id: "m1".into(),
                reason: "cancelled".into(),
            },
            AgentEvent::TurnInfo {
                autonomous: true,
                interrupted: true,
            },
        ] {
            a.apply(&e, &mut out);
        }
        let texts: Vec<_> = out.iter().map(Entry::text).collect();
        assert_eq!(
            texts,
            [
                "$ Bash sleep 6",
                "[background task b1 started: Run scripted command]",
                "$ Bash sleep 6",
                "[background task b1 completed]",
                "[the message streaming was dropped (cancelled): it is not in the agent's history]",
                "[the agent's own turn, woken by a background task, was interrupted]",
            ]
        );
    }

    #[test]
    fn entries_read_as_the_narrative_writes_them() {
        let failed = Entry::Outcome {
            ok: false,
            text: "é".repeat(300),
        };
        assert!(failed.text().starts_with("  → failed: é"));
        assert!(failed.text().ends_with('…'));
        let ok = Entry::Outcome {
            ok: true,
            text: String::new(),
        };
        assert_eq!(ok.text(), "  → ok");
        let e = Entry::Error {
            message: "key sk-1".into(),
        }
        .map_text(|t| t.replace("sk-1", "[REDACTED]"));
        assert_eq!(e.text(), "! key [REDACTED]");
    }
}
