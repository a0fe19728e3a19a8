//! Messages from the humans watching a session (`oneshot say`): how the decision core takes
//! them in, hands them to the running worker, and — when it cannot take them — carries them in
//! the next worker prompt. Every move is a `message` record; the messages themselves are part
//! of the session value (journaled), so none is lost across a crash or a resume.

use super::step::Step;
use super::{Effect, Phase};
use crate::agent::{Delivery, Say};
use crate::process::Role;
use crate::session::record::{MessageRecord, Record};
use serde::{Deserialize, Serialize};

/// Where a message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MessageStatus {
    /// The session has it; no worker has been given it yet.
    Received,
    /// Written to the running worker's input; not yet taken in.
    Sent,
    /// Kept until the worker's running turn ends: its ACP prompt returns, or (`--now`) the
    /// turn of its own it was interrupted for has been torn down.
    Held,
    /// The running worker cannot take it mid-run (or its run ended first): the next worker
    /// prompt carries it.
    NextPrompt,
    /// The running worker took it in.
    Taken,
    /// A worker prompt carried it.
    InPrompt,
}

impl MessageStatus {
    /// The word logs and listings use.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Received => "received",
            MessageStatus::Sent => "sent",
            MessageStatus::Held => "held",
            MessageStatus::NextPrompt => "next_prompt",
            MessageStatus::Taken => "taken",
            MessageStatus::InPrompt => "in_prompt",
        }
    }

    /// Still waiting for a worker to be given it.
    pub fn waits_for_prompt(self) -> bool {
        matches!(self, MessageStatus::Received | MessageStatus::NextPrompt)
    }

    /// Given to the running worker, not yet taken in.
    pub fn in_flight(self) -> bool {
        matches!(self, MessageStatus::Sent | MessageStatus::Held)
    }
}

impl From<Delivery> for MessageStatus {
    fn from(d: Delivery) -> Self {
        match d {
            Delivery::Sent => MessageStatus::Sent,
            Delivery::Held => MessageStatus::Held,
            Delivery::NextPrompt => MessageStatus::NextPrompt,
        }
    }
}

/// A human's message to the session's worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Said {
    /// Its id (a UUID; Claude keeps it on the user line).
    pub id: String,
    /// Who said it (`ONESHOT_ACTOR`, the user's name, a token's name).
    pub actor: String,
    /// When it was said, unix milliseconds.
    pub ts: u64,
    /// The text (redacted).
    pub text: String,
    /// Preempt the running turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub now: bool,
    /// Where it stands.
    pub status: MessageStatus,
    /// When the worker took it in (mid-run, or in a prompt), unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_ms: Option<u64>,
    /// The worker iteration that took it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_iteration: Option<u32>,
}

/// A message id as people read it: its first 8 characters (a UUID's first group), as the
/// CLI, the dashboard and the log lines all show it.
pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

impl Step<'_> {
    /// A message arrived for the session: kept (once, by id), recorded, and handed to the
    /// running worker when one runs.
    pub(super) fn message_said(&mut self, mut said: Said) {
        if self.s.messages.iter().any(|m| m.id == said.id) {
            return;
        }
        said.text = self.d.redact(&said.text).into_owned();
        said.status = MessageStatus::Received;
        said.taken_ms = None;
        said.taken_iteration = None;
        self.s.messages.push(said.clone());
        self.message_record(&said, true);
        self.journal();
        if self.worker_runs() {
            self.out.push(Effect::Deliver(Say {
                id: said.id,
                text: said.text,
                now: said.now,
            }));
        }
    }

    /// The running worker's driver did this with message `id` — or, for
    /// [`Delivery::NextPrompt`] after it was sent, the agent refused it.
    pub(super) fn message_delivered(&mut self, id: &str, delivery: Delivery) {
        let status = MessageStatus::from(delivery);
        let moves = |m: &Said| {
            m.status == MessageStatus::Received
                || (status == MessageStatus::NextPrompt && m.status.in_flight())
        };
        if self.set_status(id, status, moves) {
            self.journal();
        }
    }

    /// The running worker took message `id` in.
    pub(super) fn message_taken(&mut self, id: &str) {
        let (now, iteration) = (self.now, self.s.iteration);
        let Some(m) = self.s.messages.iter_mut().find(|m| m.id == id) else {
            return;
        };
        if m.status == MessageStatus::Taken || m.status == MessageStatus::InPrompt {
            return;
        }
        m.status = MessageStatus::Taken;
        m.taken_ms = Some(now);
        m.taken_iteration = Some(iteration);
        let m = m.clone();
        self.message_record(&m, false);
        self.journal();
    }

    /// A worker is about to start: the messages no worker has taken in go at the end of its
    /// prompt (which is what is stored and recorded).
    pub(super) fn messages_into_prompt(&mut self) {
        let waiting: Vec<usize> = (0..self.s.messages.len())
            .filter(|&i| self.s.messages[i].status.waits_for_prompt())
            .collect();
        if waiting.is_empty() {
            return;
        }
        let mut text = String::from(
            "\n\n---\nMessages from the people overseeing this work, said while you worked or \
             since (oldest first; take them into account):\n",
        );
        for &i in &waiting {
            let m = &self.s.messages[i];
            text.push_str(&format!(
                "\n[{}] {}: {}\n",
                rfc3339_minute(m.ts),
                m.actor,
                m.text
            ));
        }
        self.s.worker_prompt.push_str(&text);
        for i in waiting {
            let m = &mut self.s.messages[i];
            m.status = MessageStatus::InPrompt;
            m.taken_ms = Some(self.now);
            m.taken_iteration = Some(self.s.iteration);
            let m = m.clone();
            self.message_record(&m, false);
        }
        // What the worker is given is in the state file before it starts.
        self.journal();
    }

    /// The worker started: messages that arrived while it was being started go to it now.
    pub(super) fn deliver_waiting(&mut self) {
        if !self.worker_runs() {
            return;
        }
        let waiting: Vec<Say> = self
            .s
            .messages
            .iter()
            .filter(|m| m.status == MessageStatus::Received)
            .map(|m| Say {
                id: m.id.clone(),
                text: m.text.clone(),
                now: m.now,
            })
            .collect();
        self.out.extend(waiting.into_iter().map(Effect::Deliver));
    }

    /// The worker's run ended: what it was given and did not take in waits for the next prompt.
    pub(super) fn messages_not_taken(&mut self) {
        let ids: Vec<String> = self
            .s
            .messages
            .iter()
            .filter(|m| m.status.in_flight())
            .map(|m| m.id.clone())
            .collect();
        for id in ids {
            self.set_status(&id, MessageStatus::NextPrompt, |_| true);
        }
    }

    /// The session ended while messages still waited for a worker prompt: none will come, so
    /// they are named in a warning (each stays in the state file and the log).
    pub(super) fn messages_left_unheard(&mut self) {
        let state = self.s.state();
        if !state.is_terminal() {
            return;
        }
        let unheard: Vec<String> = self
            .s
            .messages
            .iter()
            .filter(|m| m.status.waits_for_prompt())
            .map(|m| format!("{} from {}", short_id(&m.id), m.actor))
            .collect();
        if unheard.is_empty() {
            return;
        }
        self.warn(&format!(
            "the session ended ({state}) before a worker ran again: no worker was given message \
             {} — say it to a new session, or have the policy's verdict hook ask for another \
             iteration while ctx.messages holds one waiting (status \"next_prompt\")",
            unheard.join(", ")
        ));
    }

    /// Sets message `id`'s status when `when` holds, recording the move; true if it moved.
    fn set_status(
        &mut self,
        id: &str,
        status: MessageStatus,
        when: impl Fn(&Said) -> bool,
    ) -> bool {
        let Some(m) = self.s.messages.iter_mut().find(|m| m.id == id) else {
            return false;
        };
        if m.status == status || !when(m) {
            return false;
        }
        m.status = status;
        let m = m.clone();
        self.message_record(&m, false);
        true
    }

    /// Whether a worker process runs now (started, not ended): a message can reach it.
    fn worker_runs(&self) -> bool {
        match &self.s.phase {
            Phase::WorkerExecuting(run) => {
                self.s.phase.role() == Some(Role::Worker)
                    && run.process.is_some()
                    && run.exited.is_none()
                    && run.stopping.is_none()
            }
            _ => false,
        }
    }

    /// The `message` record of `m` as it stands; the text only when it first arrives.
    fn message_record(&mut self, m: &Said, first: bool) {
        let record = Record::Message(MessageRecord {
            ts: self.now,
            id: m.id.clone(),
            actor: m.actor.clone(),
            text: if first { m.text.clone() } else { String::new() },
            now: m.now,
            said_ms: first.then_some(m.ts),
            status: m.status,
            iteration: self.s.iteration,
        });
        self.record(record);
    }
}

/// `2026-11-26 08:40 UTC`: when a message was said, as a prompt shows it.
fn rfc3339_minute(ms: u64) -> String {
    let full = super::value::rfc3339(ms);
    // `2026-11-26T08:40:12.345Z` → `2026-11-26 08:40 UTC`
    match (full.get(..10), full.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time} UTC"),
        _ => full,
    }
}

#[cfg(test)]
mod tests;
