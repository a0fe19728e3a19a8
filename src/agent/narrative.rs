//! A run told as a person would read it: what the agent said, which tools it ran with what,
//! and how they went — in the order it happened. This, not the raw protocol stream (kilobytes
//! of JSON per step), is the worker's output an auditor reads and a policy sees as
//! `worker_output`; the raw lines stay in the log.

use super::AgentEvent;
use serde_json::Value;
use std::collections::HashSet;

/// How much of a tool's input or result one line shows: enough to judge, not a whole file.
const SHOWN: usize = 400;

/// The run's account, kept to its last `max` bytes.
#[derive(Debug)]
pub struct Narrative {
    text: String,
    max: usize,
    /// Messages whose text arrived in fragments: their whole text, when it comes, is not
    /// repeated.
    streamed: HashSet<String>,
    /// The last line ended (the next fragment of another message starts a new one).
    open: Option<Option<String>>,
}

impl Narrative {
    /// An empty account keeping at most `max` bytes (the oldest go first).
    pub fn new(max: usize) -> Narrative {
        Narrative {
            text: String::new(),
            max,
            streamed: HashSet::new(),
            open: None,
        }
    }

    /// Adds what `event` tells.
    pub fn apply(&mut self, event: &AgentEvent) {
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
                if self.open.as_ref() != Some(message_id) {
                    self.end_line();
                    self.open = Some(message_id.clone());
                }
                self.text.push_str(text);
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
                if !text.trim().is_empty() {
                    self.line(text.trim_end());
                }
            }
            AgentEvent::ToolCall { name, input, .. } => {
                self.line(&format!("$ {name} {}", cut(&compact(input))));
            }
            AgentEvent::ToolResult {
                content, is_error, ..
            } => {
                let how = if *is_error { "failed" } else { "ok" };
                let content = content.trim();
                if content.is_empty() {
                    self.line(&format!("  → {how}"));
                } else {
                    self.line(&format!("  → {how}: {}", cut(content)));
                }
            }
            AgentEvent::Error { message, .. } => self.line(&format!("! {message}")),
            _ => {}
        }
        self.trim();
    }

    /// Adds what the agent wrote on stderr (its warnings and crashes), as it wrote it.
    pub fn stderr(&mut self, bytes: &[u8]) {
        self.end_line();
        self.text.push_str(&String::from_utf8_lossy(bytes));
        self.trim();
    }

    /// The account so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn end_line(&mut self) {
        if self.open.take().is_some() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
    }

    fn line(&mut self, s: &str) {
        self.end_line();
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push_str(s);
        self.text.push('\n');
    }

    fn trim(&mut self) {
        if self.text.len() > self.max {
            let mut from = self.text.len() - self.max;
            while !self.text.is_char_boundary(from) {
                from += 1;
            }
            self.text.drain(..from);
        }
    }
}

/// A tool input on one line: a command as its words, anything else as compact JSON.
fn compact(input: &Value) -> String {
    match input.get("command") {
        Some(Value::String(c)) => c.clone(),
        _ => input.to_string(),
    }
}

/// `s` on one line, cut at [`SHOWN`] bytes.
fn cut(s: &str) -> String {
    let one_line = s.replace('\n', "⏎");
    if one_line.len() <= SHOWN {
        return one_line;
    }
    let mut end = SHOWN;
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

    #[test]
    fn a_run_reads_in_order_and_streamed_text_appears_once() {
        let mut n = Narrative::new(1 << 16);
        for e in [
            text("m1", "I will ", true),
            text("m1", "write it.", true),
            text("m1", "I will write it.", false),
            AgentEvent::ToolCall {
                id: "c1".into(),
                name: "command_execution".into(),
                input: json!({"command": "echo one > notes.txt"}),
                message_id: None,
            },
            AgentEvent::ToolResult {
                tool_call_id: "c1".into(),
                content: String::new(),
                is_error: false,
            },
            text("m2", "Done.", false),
        ] {
            n.apply(&e);
        }
        assert_eq!(
            n.text(),
            "I will write it.\n$ command_execution echo one > notes.txt\n  → ok\nDone.\n"
        );
    }

    #[test]
    fn long_results_are_cut_and_the_oldest_text_goes_first() {
        let mut n = Narrative::new(600);
        n.apply(&AgentEvent::ToolResult {
            tool_call_id: "c".into(),
            content: "é".repeat(1000),
            is_error: true,
        });
        assert!(n.text().starts_with("  → failed: é"));
        assert!(n.text().len() < 450, "{}", n.text().len());
        for i in 0..20 {
            n.apply(&text(
                &format!("m{i}"),
                &format!("message {i} {}", "x".repeat(50)),
                false,
            ));
        }
        assert!(n.text().len() <= 600);
        assert!(
            n.text()
                .ends_with(&format!("message 19 {}\n", "x".repeat(50)))
        );
    }
}
