//! Who owns an agent process's turns (seed 004 §1–§3): nobody (idle), a prompt or message of
//! ours (foreground), or the agent itself, woken by a background task it started
//! (autonomous). One place routes every normalized event, by the ids the events carry —
//! tool call ids, task ids, message ids — never by timing windows; the reader of the run
//! ([`super::Tap`]) asks it whether the agent's input must stay open.
//!
//! The run of an agent that can take turns of its own ends only when no turn is active, no
//! background task runs, no message of ours waits to be taken in, and no task's notification
//! waits for its turn. Closing the input earlier would make Claude kill its background tasks
//! after a 5 s grace, and the turn it would have taken when they finished would never happen
//! (../shared/agents/turns.md §1).

use super::AgentEvent;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Who owns the agent's current turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Owner {
    /// No turn runs.
    Idle,
    /// A turn started by a prompt or message of ours.
    Foreground,
    /// A turn the agent started itself (a background task's notification woke it).
    Autonomous,
}

impl Owner {
    /// The word logs and status lines use.
    pub fn as_str(self) -> &'static str {
        match self {
            Owner::Idle => "idle",
            Owner::Foreground => "foreground",
            Owner::Autonomous => "autonomous",
        }
    }
}

/// A change of turn the session should know of (it records each).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TurnChange {
    /// A turn began; `owner` is who it is routed to.
    Began {
        /// Foreground or autonomous.
        owner: Owner,
    },
    /// The turn ended (its final result).
    Ended {
        /// Who owned it, as its result said when the protocol says (Claude's `origin`).
        owner: Owner,
        /// It was cut short (an interrupt, a preempting message).
        interrupted: bool,
    },
}

/// A task the agent runs beside its turns.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Task {
    /// Started in the background (`run_in_background`), not a long foreground tool.
    background: bool,
}

/// Turn ownership and background tasks of one agent process.
#[derive(Debug)]
pub struct Turns {
    owner: Owner,
    /// Tool calls whose input asked to run in the background, by call id.
    background_calls: HashSet<String>,
    /// Tasks still running, by task id.
    tasks: BTreeMap<String, Task>,
    /// Every task known to run in the background, running or not: a foreground tool's
    /// notification (Claude sends one for a long foreground Bash) owes no turn.
    background_tasks: HashSet<String>,
    /// Messages of ours sent or held and not yet taken in, by id.
    unanswered: BTreeSet<String>,
    /// Background tasks that ended and whose notification still owes the agent a turn.
    owed: BTreeSet<String>,
    /// What the protocol said of the turn about to end ([`AgentEvent::TurnInfo`]).
    ending: Option<(bool, bool)>,
    /// Turns that ended, and how many of them the agent started itself.
    turns: u32,
    autonomous_turns: u32,
}

impl Default for Turns {
    fn default() -> Self {
        Turns::new()
    }
}

impl Turns {
    /// Nothing running yet.
    pub fn new() -> Turns {
        Turns {
            owner: Owner::Idle,
            background_calls: HashSet::new(),
            tasks: BTreeMap::new(),
            background_tasks: HashSet::new(),
            unanswered: BTreeSet::new(),
            owed: BTreeSet::new(),
            ending: None,
            turns: 0,
            autonomous_turns: 0,
        }
    }

    /// Who owns the turn now.
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// Our prompt went to the agent: a foreground turn runs.
    pub fn prompted(&mut self) -> Option<TurnChange> {
        self.begin(Owner::Foreground)
    }

    /// Message `id` was sent (or is held by the driver) and waits to be taken in.
    pub fn message_sent(&mut self, id: &str) {
        self.unanswered.insert(id.to_owned());
    }

    /// Message `id` will not be taken in by this process (withdrawn, or the run is over).
    pub fn message_dropped(&mut self, id: &str) {
        self.unanswered.remove(id);
    }

    /// The messages sent and not yet taken in.
    pub fn unanswered(&self) -> impl Iterator<Item = &str> {
        self.unanswered.iter().map(String::as_str)
    }

    /// Routes one event; returns the change of turn it made, if any.
    pub fn apply(&mut self, event: &AgentEvent) -> Option<TurnChange> {
        match event {
            // Claude emits `init` at the start of every turn, Codex `turn/started`.
            AgentEvent::SessionStarted { .. } | AgentEvent::TurnStarted => {
                if self.owner != Owner::Idle {
                    return None;
                }
                // A finished task's notification owes the agent a turn: this is it, unless a
                // message of ours waits (then ours; a merge shows in the result's origin).
                let owner = if !self.owed.is_empty() || self.unanswered.is_empty() {
                    Owner::Autonomous
                } else {
                    Owner::Foreground
                };
                self.begin(owner)
            }
            AgentEvent::MessageStarted { .. }
            | AgentEvent::AssistantText { .. }
            | AgentEvent::Reasoning { .. }
                if self.owner == Owner::Idle =>
            {
                // Model output with no turn open: the agent acts on its own.
                self.begin(Owner::Autonomous)
            }
            AgentEvent::ToolCall { id, input, .. } => {
                if input.get("run_in_background").and_then(|v| v.as_bool()) == Some(true) {
                    self.background_calls.insert(id.clone());
                }
                None
            }
            AgentEvent::TaskStarted {
                task_id,
                tool_call_id,
                ..
            } => {
                let background = tool_call_id
                    .as_ref()
                    .is_some_and(|c| self.background_calls.contains(c));
                let task = self
                    .tasks
                    .entry(task_id.clone())
                    .or_insert(Task { background });
                task.background |= background;
                if task.background {
                    self.background_tasks.insert(task_id.clone());
                }
                None
            }
            AgentEvent::TaskBackgrounded { task_id, .. } => {
                self.tasks
                    .entry(task_id.clone())
                    .or_insert(Task { background: true })
                    .background = true;
                self.background_tasks.insert(task_id.clone());
                None
            }
            AgentEvent::TaskEnded { task_id, status } => {
                let task = self.tasks.remove(task_id);
                // A background task that finished while no turn ran wakes the agent; one that
                // finished during a turn is merged into it or announced (TaskNotified).
                if task.is_some_and(|t| t.background)
                    && status != "killed"
                    && self.owner == Owner::Idle
                {
                    self.owed.insert(task_id.clone());
                }
                None
            }
            AgentEvent::TaskNotified { task_id, status } => {
                self.tasks.remove(task_id);
                if status == "stopped" || !self.background_tasks.contains(task_id) {
                    self.owed.remove(task_id);
                } else {
                    self.owed.insert(task_id.clone());
                }
                None
            }
            AgentEvent::MessageTaken { message_id }
            | AgentEvent::MessageRefused { message_id, .. } => {
                self.unanswered.remove(message_id);
                None
            }
            AgentEvent::TurnInfo {
                autonomous,
                interrupted,
            } => {
                self.ending = Some((*autonomous, *interrupted));
                None
            }
            AgentEvent::Final { .. } => {
                let was = self.owner;
                let (autonomous, interrupted) = self
                    .ending
                    .take()
                    .unwrap_or((was == Owner::Autonomous, false));
                let owner = if autonomous {
                    Owner::Autonomous
                } else {
                    Owner::Foreground
                };
                if autonomous {
                    // Notifications queued together are answered in one turn.
                    self.owed.clear();
                    self.autonomous_turns += 1;
                }
                self.turns += 1;
                self.owner = Owner::Idle;
                Some(TurnChange::Ended { owner, interrupted })
            }
            _ => None,
        }
    }

    fn begin(&mut self, owner: Owner) -> Option<TurnChange> {
        if self.owner == owner {
            return None;
        }
        self.owner = owner;
        Some(TurnChange::Began { owner })
    }

    /// The background tasks still running (what `stop_task` names), oldest id first.
    pub fn background(&self) -> Vec<String> {
        self.tasks
            .iter()
            .filter(|(_, t)| t.background)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Whether the agent must keep its input: a turn runs, a background task runs, a message
    /// waits to be taken in, or a finished task's turn is still owed.
    pub fn keep_open(&self) -> bool {
        self.owner != Owner::Idle
            || !self.unanswered.is_empty()
            || !self.owed.is_empty()
            || self.tasks.values().any(|t| t.background)
    }

    /// No turn runs and none is owed, but background tasks do: the run waits on them alone
    /// (the policy's `limits.background_wait` bounds that, not inactivity).
    pub fn waiting_on_background(&self) -> bool {
        self.owner == Owner::Idle
            && self.unanswered.is_empty()
            && self.owed.is_empty()
            && self.tasks.values().any(|t| t.background)
    }

    /// Turns ended so far, and how many of them were the agent's own.
    pub fn counts(&self) -> (u32, u32) {
        (self.turns, self.autonomous_turns)
    }
}

#[cfg(test)]
mod tests;
