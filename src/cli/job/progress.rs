//! What `job run` shows while it works: a line per job transition, and on a terminal a live
//! status line (steps running, where finished steps left their jobs, elapsed time) — or with
//! `--json`, the same as NDJSON events on stdout (docs/json.md, "oneshot job run --json").

use super::paint;
use crate::cli::show::{one_line, rfc3339};
use crate::cli::statusline::{clock, fit};
use crate::cli::term::{status_line_fits, terminal_width};
use oneshot::engine::Update;
use oneshot::job::JobState;
use oneshot::job::runner::{Ended, Note, StepEnd};
use oneshot::sandbox::limits::format_size;
use std::collections::BTreeMap;
use std::time::Instant;

/// The face of one `job run`.
pub(super) struct Progress {
    quiet: bool,
    json: bool,
    /// A status line can be drawn: stderr and stdout are one terminal that takes cursor control.
    live: bool,
    shown: bool,
    started: Instant,
    /// Where each job this run touched is now.
    jobs: BTreeMap<String, JobState>,
}

impl Progress {
    pub(super) fn new(quiet: bool, json: bool) -> Progress {
        Progress {
            quiet,
            json,
            live: !json && status_line_fits(quiet),
            shown: false,
            started: Instant::now(),
            jobs: BTreeMap::new(),
        }
    }

    /// A note from the runner: printed (a line, or an event), and counted.
    pub(super) fn note(&mut self, note: &Note) {
        match note {
            Note::Moved { job, transition: t } => {
                self.jobs.insert(job.clone(), t.to);
                let reason = t.reason.as_ref().map(ToString::to_string);
                if self.json {
                    event(&Event::JobTransition {
                        job_id: job,
                        from: t.from,
                        to: t.to,
                        trigger: t.trigger.name(),
                        reason: reason.as_deref(),
                        cause: super::json::cause(t.reason.as_ref()),
                        by: &t.by,
                        at: rfc3339(t.at_ms),
                    });
                } else if !self.quiet {
                    self.clear();
                    let why = reason
                        .as_deref()
                        .map(|r| format!("  ({})", one_line(r, 100)))
                        .unwrap_or_default();
                    outln!("{job}  {} → {}{why}", paint(t.from), paint(t.to));
                    self.draw();
                }
            }
            Note::Session { job, update } => self.session(job, update),
            Note::Ended(end) => {
                self.jobs.insert(end.job.clone(), end.state);
                if self.json {
                    event(&step_end(end));
                }
            }
            Note::StoreUnreachable { error, retry_in } => {
                let message = format!(
                    "the job store cannot be reached ({error}); trying again in {}",
                    humantime::format_duration(*retry_in)
                );
                if self.json {
                    event(&Event::Warning {
                        job_id: "-",
                        message: &message,
                    });
                } else {
                    self.clear();
                    errln!("oneshot: warning: {message}");
                    self.draw();
                }
            }
            Note::MemoryLow {
                available,
                reserve,
                held,
            } => self.say(&format!(
                "waiting for memory: {} free, reserve {}; {held} job{} held back",
                format_size(*available),
                format_size(*reserve),
                if *held == 1 { "" } else { "s" }
            )),
            Note::MemoryFreed { available, reserve } => self.say(&format!(
                "memory freed: {} free, reserve {}; starting jobs again",
                format_size(*available),
                format_size(*reserve)
            )),
            // A note a newer library tells: nothing this status line counts.
            _ => {}
        }
    }

    /// A line about the runner itself (on stderr; with `--json` a `warning` event with no job).
    fn say(&mut self, message: &str) {
        if self.json {
            event(&Event::Warning {
                job_id: "-",
                message,
            });
        } else if !self.quiet {
            self.clear();
            errln!("oneshot: {message}");
            self.draw();
        }
    }

    /// What a job's session told: its transitions (events with `--json`), its warnings.
    fn session(&mut self, job: &str, update: &Update) {
        match update {
            Update::Transition {
                session_id,
                from,
                to,
                iteration,
                reason,
                ..
            } if self.json => event(&Event::SessionTransition {
                job_id: job,
                session_id,
                from: *from,
                to: *to,
                iteration: *iteration,
                reason: reason.as_ref().map(|r| r.to_string()),
                at: rfc3339(super::now_ms()),
            }),
            Update::Warning(message) if self.json => event(&Event::Warning {
                job_id: job,
                message,
            }),
            Update::Warning(message) => {
                self.clear();
                errln!("{job}  warning: {message}");
                self.draw();
            }
            _ => {}
        }
    }

    /// Redraws the status line (once a second).
    pub(super) fn tick(&mut self) {
        self.draw();
    }

    /// Takes the status line away for good (before the summary).
    pub(super) fn done(&mut self) {
        self.clear();
        self.live = false;
    }

    fn clear(&mut self) {
        if self.shown {
            err!("\r\x1b[2K");
            self.shown = false;
        }
    }

    fn draw(&mut self) {
        if !self.live {
            return;
        }
        err!("\r\x1b[2K{}", fit(&self.line(), terminal_width()));
        self.shown = true;
    }

    /// `oneshot job run · 2 running (EXECUTING 2) · rested: APPROVAL_REQUIRED 1 · 1m05s`
    fn line(&self) -> String {
        let mut running: BTreeMap<JobState, usize> = BTreeMap::new();
        let mut rested: BTreeMap<JobState, usize> = BTreeMap::new();
        for state in self.jobs.values() {
            let bucket = if state.is_resting() {
                &mut rested
            } else {
                &mut running
            };
            *bucket.entry(*state).or_default() += 1;
        }
        let list = |m: &BTreeMap<JobState, usize>| {
            m.iter()
                .map(|(s, n)| format!("{s} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let n: usize = running.values().sum();
        let mut line = format!("oneshot job run · {n} running");
        if n > 0 {
            line.push_str(&format!(" ({})", list(&running)));
        }
        if !rested.is_empty() {
            line.push_str(&format!(" · rested: {}", list(&rested)));
        }
        line.push_str(&format!(" · {}", clock(self.started.elapsed())));
        line
    }
}

/// One line of `job run --json`. Internally tagged, so `type` comes first on every line, as in
/// `run --json`.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Event<'a> {
    /// A job moved.
    JobTransition {
        job_id: &'a str,
        from: JobState,
        to: JobState,
        /// The trigger's name (`step`, `provisioned`, `harvested: approval required`, …).
        trigger: &'static str,
        reason: Option<&'a str>,
        /// Why, typed (`kind` and its fields; docs/json.md).
        #[serde(skip_serializing_if = "Option::is_none")]
        cause: Option<serde_json::Value>,
        /// The runner (or the human) that moved it.
        by: &'a str,
        at: String,
    },
    /// The session inside a job's EXECUTING moved.
    SessionTransition {
        job_id: &'a str,
        session_id: &'a str,
        from: oneshot::SessionState,
        to: oneshot::SessionState,
        iteration: u32,
        reason: Option<String>,
        at: String,
    },
    /// Something a job's session wants known that does not change its outcome.
    Warning { job_id: &'a str, message: &'a str },
    /// A step ended.
    StepEnd {
        job_id: &'a str,
        state: JobState,
        reason: Option<&'a str>,
        lost: Option<&'a str>,
        failed: Option<&'a str>,
        paused: Option<&'a str>,
        lease_until_at: Option<String>,
    },
    /// The run ended.
    Summary {
        steps: usize,
        rested: BTreeMap<JobState, usize>,
        failed: usize,
        paused: usize,
        lost: usize,
        exit_code: i32,
    },
}

/// Prints `e` as one NDJSON line on stdout (redacted, as everything oneshot prints).
pub(super) fn event(e: &Event<'_>) {
    // Plain data: always serializes.
    if let Ok(line) = serde_json::to_string(e) {
        outln!("{line}");
    }
}

/// A step's end as an event.
fn step_end(e: &StepEnd) -> Event<'_> {
    let (mut lost, mut failed, mut paused, mut lease_until_at) = (None, None, None, None);
    match &e.ended {
        Ended::Lost(why) => lost = Some(why.as_str()),
        Ended::Failed {
            why,
            lease_until_ms,
        } => {
            failed = Some(why.as_str());
            lease_until_at = lease_until_ms.map(rfc3339);
        }
        Ended::Paused(what) => paused = Some(what.as_str()),
        _ => {}
    }
    Event::StepEnd {
        job_id: &e.job,
        state: e.state,
        reason: e.reason.as_deref(),
        lost,
        failed,
        paused,
        lease_until_at,
    }
}
