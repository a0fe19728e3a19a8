//! A session's iterations as its log tells them: for each, the worker's run (its prompt, its
//! account — what it said, each tool with its input and outcome — or a command's output, what
//! it changed, what it spent), the auditor's answers, and the verdict. What `oneshot show` prints,
//! and what a dashboard's timeline reads, from the log alone.
//!
//! # How it works
//!
//! [`read`] walks the typed log once. Each `process started` record opens a run; its agent's
//! stdout lines (`activity`) are read back into its account through the agent's protocol parser
//! ([`AccountReader`]), its usage and exit close it; evidence, verdict decisions and transitions
//! are filed under the iteration they name.

use crate::agent::{AccountReader, Entry};
use crate::pipeline::Stream;
use crate::policy::VerdictDecision;
use crate::process::Role;
use crate::session::{Reason, Spent};
use crate::store::{DecisionResult, Hook, Log, ProcessEvent, Record};
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;

/// How many lines of one run are kept (its last ones; the count of the others is kept).
pub(crate) const MAX_LINES: usize = 400;

/// One iteration.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Iteration {
    /// Its number, from 1.
    pub number: u32,
    /// The worker's runs: one, or more when a transient failure was retried or a pause rerun.
    pub worker: Vec<Run>,
    /// The files the worker changed, as the last inspection found them.
    pub changed_files: Vec<String>,
    /// The auditor's runs: one, or more when an answer held no verdict and it was asked again.
    pub auditor: Vec<Run>,
    /// The verdict the iteration ended with (the last one asked; `verdict: None` for an answer
    /// that held none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// How the iteration ended: the reason of its last transition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Reason>,
}

/// A verdict as the iteration shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// `done`, `retry`, `impossible`, or `none` (the answer held no verdict).
    pub verdict: &'static str,
    /// The reason; for a retry, the critique the next prompt carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The auditor's confidence, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

impl From<&VerdictDecision> for Verdict {
    fn from(v: &VerdictDecision) -> Verdict {
        Verdict {
            verdict: crate::policy::verdict_word(v.verdict),
            reason: v.reason.clone(),
            confidence: v.confidence,
        }
    }
}

/// One run of the worker or the auditor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// Worker or auditor.
    pub role: Role,
    /// What ran it: an agent's name (`claude`, `codex`, …) or `command`.
    pub executor: String,
    /// Its prompt.
    pub prompt: String,
    /// When it started, unix milliseconds.
    pub started_ms: u64,
    /// When it ended, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<u64>,
    /// Its exit code, when it exited normally.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// What it did, in order: an agent's account, a command's output (its last 400 lines).
    pub lines: Vec<RunLine>,
    /// How many earlier lines were left out.
    #[serde(skip_serializing_if = "is_zero")]
    pub earlier: usize,
    /// What its agent reported using (zero for a command).
    pub spent: Spent,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One line of what a run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunLine {
    /// An entry of an agent's account.
    Entry {
        /// The entry.
        #[serde(flatten)]
        entry: Entry,
    },
    /// A line a command printed, or an agent's stderr.
    Output {
        /// Which pipe.
        stream: Stream,
        /// The line (redacted, as logged).
        text: String,
    },
    /// A human's message to the worker arrived, or moved (sent, taken in, kept for the next
    /// prompt): the `message` record's line.
    Message {
        /// The message's id.
        id: String,
        /// Where it stands (`received`, `sent`, `taken`, …).
        status: crate::session::MessageStatus,
        /// The record in words (`message 1a2b3c4d from ann: …`).
        text: String,
    },
    /// A turn of the agent's own (a background task woke it) began or ended, or a turn was
    /// cut short: the `turn` record's line.
    Turn {
        /// Whose turn.
        owner: crate::agent::Owner,
        /// The record in words.
        text: String,
    },
    /// The egress proxy refused the agent a connection: the `egress` record's line, with the
    /// policy line that would allow it.
    Egress {
        /// The host asked for.
        host: String,
        /// The port asked for.
        port: u16,
        /// The record in words (`egress refused: worker (claude) → …`).
        text: String,
    },
}

/// A run being read: the run, its lines as they come, its agent's reader.
struct Open {
    run: Run,
    iteration: u32,
    lines: VecDeque<RunLine>,
    reader: Option<AccountReader>,
}

impl Open {
    fn push(&mut self, line: RunLine) {
        if self.lines.len() == MAX_LINES {
            self.lines.pop_front();
            self.run.earlier += 1;
        }
        self.lines.push_back(line);
    }

    fn entries(&mut self, entries: Vec<Entry>) {
        for entry in entries {
            self.push(RunLine::Entry { entry });
        }
    }

    fn close(mut self) -> (u32, Run) {
        if let Some(reader) = &mut self.reader {
            let mut rest = Vec::new();
            reader.flush(&mut rest);
            self.entries(rest);
        }
        self.run.lines = self.lines.into();
        (self.iteration, self.run)
    }
}

/// The iterations of the session `log` records, in order.
pub fn read(log: &Log) -> Vec<Iteration> {
    let mut out: Vec<Iteration> = Vec::new();
    let mut open: [Option<Open>; 2] = [None, None];
    let slot = |role: Role| match role {
        Role::Worker => 0,
        Role::Auditor => 1,
    };
    for record in &log.records {
        match record {
            Record::Process(p) => {
                let at = slot(p.role);
                match &p.event {
                    ProcessEvent::Started { prompt, .. } => {
                        if let Some(o) = open[at].take() {
                            file(&mut out, o.close());
                        }
                        open[at] = Some(Open {
                            run: Run {
                                role: p.role,
                                executor: String::new(),
                                prompt: prompt.clone(),
                                started_ms: p.ts,
                                ended_ms: None,
                                exit_code: None,
                                signal: None,
                                lines: Vec::new(),
                                earlier: 0,
                                spent: Spent::default(),
                            },
                            iteration: p.iteration,
                            lines: VecDeque::new(),
                            reader: None,
                        });
                    }
                    ProcessEvent::AgentUsage { spent } | ProcessEvent::AgentProgress { spent } => {
                        if let Some(o) = &mut open[at] {
                            o.run.spent = *spent;
                        }
                    }
                    ProcessEvent::Exited {
                        exit_code, signal, ..
                    } => {
                        if let Some(mut o) = open[at].take() {
                            o.run.ended_ms = Some(p.ts);
                            o.run.exit_code = *exit_code;
                            o.run.signal = *signal;
                            file(&mut out, o.close());
                        }
                    }
                    _ => {}
                }
            }
            Record::Activity(a) => {
                let Some(o) = &mut open[slot(a.role)] else {
                    continue;
                };
                if o.run.executor.is_empty() {
                    o.run.executor = a.executor.clone();
                    o.reader = AccountReader::for_executor(&a.executor, a.role);
                }
                let text = match &a.data {
                    Value::String(t) => t.clone(),
                    v => v.to_string(),
                };
                match (&mut o.reader, a.stream) {
                    (Some(reader), Stream::Stdout) if !a.partial => {
                        let mut entries = Vec::new();
                        reader.line(&text, &mut entries);
                        o.entries(entries);
                    }
                    // A piece of a line too long to parse: the raw log keeps it.
                    (Some(_), Stream::Stdout) => {}
                    (_, stream) => o.push(RunLine::Output { stream, text }),
                }
            }
            Record::Message(m) => {
                if let Some(o) = &mut open[slot(Role::Worker)] {
                    o.push(RunLine::Message {
                        id: m.id.clone(),
                        status: m.status,
                        text: crate::session::record::message_line(m),
                    });
                }
            }
            // The turns worth a line in a run: the agent's own, and one cut short; a turn of
            // ours begins with each prompt or message, which the run already shows.
            Record::Turn(t) if t.owner == crate::agent::Owner::Autonomous || t.interrupted => {
                if let Some(o) = &mut open[slot(t.role)] {
                    o.push(RunLine::Turn {
                        owner: t.owner,
                        text: crate::session::record::turn_line(t),
                    });
                }
            }
            Record::Egress(e) => {
                if let Some(o) = &mut open[slot(e.role)] {
                    o.push(RunLine::Egress {
                        host: e.host.clone(),
                        port: e.port,
                        text: crate::session::record::egress_line(e),
                    });
                }
            }
            Record::Evidence(e) => {
                iteration(&mut out, e.iteration).changed_files = e.evidence.changed_files.clone();
            }
            Record::Decision(d) if d.hook == Hook::Verdict => {
                if let DecisionResult::Verdict(v) = &d.result {
                    iteration(&mut out, d.iteration).verdict = Some(v.into());
                }
            }
            Record::StateChange(c) if c.iteration > 0 => {
                iteration(&mut out, c.iteration).outcome = c.reason.clone();
            }
            _ => {}
        }
    }
    // Runs still open when the log ends: a session still running, or killed.
    for o in open.into_iter().flatten() {
        file(&mut out, o.close());
    }
    out
}

/// Files a closed run under its iteration.
fn file(out: &mut Vec<Iteration>, (n, run): (u32, Run)) {
    let it = iteration(out, n);
    match run.role {
        Role::Worker => it.worker.push(run),
        Role::Auditor => it.auditor.push(run),
    }
}

/// Iteration `n` of `out`, made (with any before it) when new.
fn iteration(out: &mut Vec<Iteration>, n: u32) -> &mut Iteration {
    let n = n.max(1);
    while out.last().is_none_or(|l| l.number < n) {
        let number = out.last().map_or(1, |l| l.number + 1);
        out.push(Iteration {
            number,
            ..Iteration::default()
        });
    }
    out.iter_mut().find(|i| i.number == n).expect("made above")
}

#[cfg(test)]
mod tests;
