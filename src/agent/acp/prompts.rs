//! The `session/prompt` requests an ACP driver has written and not yet seen through, oldest
//! first. ACP has one prompt at a time — a second one cancels the first (Gemini's prompt
//! handler begins by aborting the pending one, ../shared/agents/turns.md §4) — and their
//! answers can come back out of order (a cancelled prompt's answer after the next one's), so
//! each prompt's end is told only once every earlier one's has been: the run reads as one turn
//! after another.

use serde_json::Value;
use std::collections::VecDeque;

/// How much of a cancelled prompt's own text its account repeats (its head: the ask).
const ASKED_MAX: usize = 4000;
/// How much of what the agent said in a cancelled turn its account repeats (its tail: the
/// latest).
const SAID_MAX: usize = 2000;
/// How many of a cancelled turn's tool calls its account names.
const TOOLS_MAX: usize = 10;

/// One prompt written to the agent.
#[derive(Debug, Default)]
pub(super) struct Prompt {
    /// What the prompt said (for the account of it, should a message cancel it).
    pub text: String,
    /// The ids of the messages said to the agent that it carries.
    pub carries: Vec<String>,
    /// The assistant messages (`m1`, `m2`, …) that streamed while it was the latest prompt.
    pub messages: Vec<String>,
    /// The text of its latest assistant message: its answer.
    pub last_text: String,
    /// What it said so far, its last [`SAID_MAX`]-odd bytes.
    pub said: String,
    /// The titles of the tools it called, the first [`TOOLS_MAX`].
    pub tools: Vec<String>,
    /// The agent's answer to it (the whole JSON-RPC message), once it came.
    pub answer: Option<Value>,
    /// Its turn was told to have started (and its messages taken in).
    pub started: bool,
}

impl Prompt {
    /// Adds streamed assistant text to what it said, keeping the tail.
    pub fn say(&mut self, text: &str) {
        self.last_text.push_str(text);
        self.said.push_str(text);
        if self.said.len() > 2 * SAID_MAX {
            let cut = floor(&self.said, self.said.len() - SAID_MAX);
            self.said.drain(..cut);
        }
    }

    /// Notes a tool call it made (Gemini names a call in its permission request, and maybe
    /// again in a `tool_call` update: once).
    pub fn tool(&mut self, title: String) {
        if self.tools.len() < TOOLS_MAX && self.tools.last() != Some(&title) {
            self.tools.push(title);
        }
    }

    /// `message`, prefixed with an account of this prompt's turn, which `message` cancels:
    /// the agent drops a cancelled turn from the model's history (all of it when nothing had
    /// come back from the model yet), so what it was asked and what it had said and done are
    /// told again, bounded.
    pub fn account_before(&self, message: &str) -> String {
        let mut out = String::from(
            "[This message interrupted your previous turn, which was cancelled; the \
             conversation may have lost it. That turn was asked:\n",
        );
        out.push_str(&self.text[..floor(&self.text, ASKED_MAX)]);
        if self.text.len() > ASKED_MAX {
            out.push('…');
        }
        let said = self.said.trim();
        if !said.is_empty() {
            out.push_str("\n\nYou had said so far:\n");
            let from = floor(said, said.len().saturating_sub(SAID_MAX));
            if from > 0 {
                out.push('…');
            }
            out.push_str(&said[from..]);
        }
        if !self.tools.is_empty() {
            out.push_str("\n\nYou had called these tools:");
            for t in &self.tools {
                out.push_str("\n- ");
                out.push_str(t);
            }
        }
        out.push_str("]\n\n");
        out.push_str(message);
        out
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The prompts written and not yet seen through, each by the number its request carries.
#[derive(Debug, Default)]
pub(super) struct Prompts {
    queue: VecDeque<(u64, Prompt)>,
    next: u64,
}

impl Prompts {
    /// Remembers a prompt about to be written; returns its number.
    pub fn push(&mut self, prompt: Prompt) -> u64 {
        self.next += 1;
        self.queue.push_back((self.next, prompt));
        self.next
    }

    /// The prompt written last: the one the agent streams for now.
    pub fn latest(&mut self) -> Option<&mut Prompt> {
        self.queue.back_mut().map(|(_, p)| p)
    }

    /// The oldest prompt not seen through.
    pub fn oldest(&mut self) -> Option<&mut Prompt> {
        self.queue.front_mut().map(|(_, p)| p)
    }

    /// The agent answered prompt `n` with `message`; false when no such prompt waits.
    pub fn answer(&mut self, n: u64, message: Value) -> bool {
        match self.queue.iter_mut().find(|(k, _)| *k == n) {
            Some((_, p)) => {
                p.answer = Some(message);
                true
            }
            None => false,
        }
    }

    /// The oldest prompt, if it has been answered and its turn told to have started.
    pub fn pop_done(&mut self) -> Option<Prompt> {
        let (_, front) = self.queue.front()?;
        if front.answer.is_none() || !front.started {
            return None;
        }
        self.queue.pop_front().map(|(_, p)| p)
    }

    /// No prompt is running.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_turns_account_is_bounded() {
        let mut p = Prompt {
            text: "é".repeat(ASKED_MAX),
            ..Prompt::default()
        };
        for _ in 0..100 {
            p.say("ü word ");
        }
        for i in 0..20 {
            p.tool(format!("ls {i}"));
        }
        let a = p.account_before("stop, do this");
        assert!(a.ends_with("]\n\nstop, do this"));
        assert!(a.len() < ASKED_MAX + SAID_MAX + 600, "{}", a.len());
        assert!(a.contains("- ls 9\n") || a.contains("- ls 9]"));
        assert!(!a.contains("ls 10"));
        assert!(p.said.len() <= 2 * SAID_MAX + 8);
        let short = Prompt {
            text: "fix it".into(),
            ..Prompt::default()
        }
        .account_before("no");
        assert_eq!(
            short,
            "[This message interrupted your previous turn, which was cancelled; the \
             conversation may have lost it. That turn was asked:\nfix it]\n\nno"
        );
    }
}
