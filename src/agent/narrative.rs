//! A run told as a person would read it: what the agent said, which tools it ran with what,
//! and how they went — in the order it happened. This, not the raw protocol stream (kilobytes
//! of JSON per step), is the worker's output an auditor reads and a policy sees as
//! `worker_output`; the raw lines stay in the log. It is the text of the run's
//! [`super::Account`] entries, with what the agent wrote on stderr in between.

use super::AgentEvent;
use super::account::{Account, Entry};

/// The run's account, kept to its last `max` bytes.
#[derive(Debug)]
pub struct Narrative {
    text: String,
    max: usize,
    account: Account,
    /// The entries not yet taken by [`Narrative::take_entries`], when they are kept at all.
    fresh: Option<Vec<Entry>>,
}

impl Narrative {
    /// An empty account keeping at most `max` bytes (the oldest go first).
    pub fn new(max: usize) -> Narrative {
        Narrative {
            text: String::new(),
            max,
            account: Account::new(),
            fresh: None,
        }
    }

    /// Keeps each entry for [`Narrative::take_entries`] too (a terminal shows them as they
    /// come); without it nothing is kept twice.
    pub fn keep_entries(&mut self) {
        self.fresh.get_or_insert_with(Vec::new);
    }

    /// The entries since the last call (none unless [`Narrative::keep_entries`] was called).
    pub fn take_entries(&mut self) -> Vec<Entry> {
        self.fresh.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Adds what `event` tells.
    pub fn apply(&mut self, event: &AgentEvent) {
        let mut out = Vec::new();
        self.account.apply(event, &mut out);
        self.add(out);
    }

    /// Adds what the agent wrote on stderr (its warnings and crashes), as it wrote it, after
    /// what it had said so far.
    pub fn stderr(&mut self, bytes: &[u8]) {
        self.finish();
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push_str(&String::from_utf8_lossy(bytes));
        self.trim();
    }

    /// The run ended: what is left of a streaming message is said.
    pub fn finish(&mut self) {
        let mut out = Vec::new();
        self.account.flush(&mut out);
        self.add(out);
    }

    /// The account so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn add(&mut self, entries: Vec<Entry>) {
        if entries.is_empty() {
            return;
        }
        for e in &entries {
            if !self.text.is_empty() && !self.text.ends_with('\n') {
                self.text.push('\n');
            }
            self.text.push_str(&e.text());
            self.text.push('\n');
        }
        if let Some(fresh) = &mut self.fresh {
            fresh.extend(entries);
        }
        self.trim();
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
