//! What a replay found, as data (`--json`) and as a table.

use crate::machine::SessionState;
use crate::store::Hook;
use serde::Serialize;
use std::fmt::Write;

/// The outcome of [`super::replay`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// The content hash of the policy replayed through.
    pub policy_hash: String,
    /// How many decisions the log recorded.
    pub decisions: usize,
    /// How many of them were re-run (the others are [`ReplayReport::incomplete`]).
    pub replayed: usize,
    /// Decisions the new policy answers differently, in log order.
    pub differences: Vec<Difference>,
    /// Decisions the new policy failed on (the recorded policy did not).
    pub errors: Vec<ReplayFailure>,
    /// Decisions that could not be re-run because a blob they reference is missing.
    pub incomplete: Vec<IncompleteDecision>,
    /// The states the recorded session went through.
    pub recorded_path: Vec<SessionState>,
    /// The states it would have gone through under the new policy, as far as the recorded
    /// facts tell.
    pub simulated_path: Vec<SessionState>,
    /// Where the simulated path first left the recorded one, and why.
    pub divergence: Option<String>,
    /// What the new policy decided after the divergence (vetoes, failures, limits).
    pub notes: Vec<String>,
    /// Why the simulation stopped before a terminal state, e.g. `iteration 3 of the worker
    /// never ran: its output was never recorded`.
    pub stopped: Option<String>,
    /// The recorded session reached a terminal state; `false` for a session still running (or
    /// interrupted), whose log is replayed as far as it goes.
    pub complete: bool,
}

/// A decision the new policy answers differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// Position among the log's decisions, from 0.
    pub index: usize,
    /// The hook.
    pub hook: Hook,
    /// The worker iteration.
    pub iteration: u32,
    /// The state it was asked in.
    pub state: SessionState,
    /// The recorded answer, shortened.
    pub old: String,
    /// The new answer, shortened.
    pub new: String,
}

/// A recorded input the new policy failed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayFailure {
    /// Position among the log's decisions, from 0.
    pub index: usize,
    /// The hook.
    pub hook: Hook,
    /// The worker iteration.
    pub iteration: u32,
    /// The state it was asked in.
    pub state: SessionState,
    /// The policy error, with `file:line` where known.
    pub error: String,
    /// Its kind as the log spells it (`runtime`, `budget`, …).
    pub kind: String,
    /// How the hook fails under the new policy: `open` (a warning, the session goes on) or
    /// `closed` (the session goes to FAILED).
    pub fails: &'static str,
}

/// A decision that was not re-run: the log lacks a blob it references.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IncompleteDecision {
    /// Position among the log's decisions, from 0.
    pub index: usize,
    /// The hook.
    pub hook: Hook,
    /// The worker iteration.
    pub iteration: u32,
    /// The state it was asked in.
    pub state: SessionState,
    /// The blob hashes not found.
    pub missing_blobs: Vec<String>,
}

impl ReplayReport {
    /// Something differs: an answer, a failure, or the path. What `--exit-code` tests.
    pub fn differs(&self) -> bool {
        !self.differences.is_empty()
            || !self.errors.is_empty()
            || self.divergence.is_some()
            || self.simulated_path != self.recorded_path
    }

    /// A plain-text report: the decisions that differ as a table (hook, iteration, old → new),
    /// then failures, then the recorded and simulated paths.
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        let status = if self.complete {
            "session finished"
        } else {
            "session not finished"
        };
        let _ = writeln!(
            out,
            "replayed {} of {} decisions through {} ({status})",
            self.replayed, self.decisions, self.policy_hash
        );
        if self.differences.is_empty() && self.errors.is_empty() {
            out.push_str("no decision differs\n");
        } else if self.differences.is_empty() {
            let _ = writeln!(
                out,
                "no answer differs, but {} decision(s) fail under this policy:",
                self.errors.len()
            );
        } else {
            let _ = writeln!(out, "{} decision(s) differ:", self.differences.len());
            let rows: Vec<[String; 6]> = self
                .differences
                .iter()
                .map(|d| {
                    [
                        d.index.to_string(),
                        d.hook.to_string(),
                        d.iteration.to_string(),
                        d.state.to_string(),
                        d.old.clone(),
                        d.new.clone(),
                    ]
                })
                .collect();
            table(
                &mut out,
                ["#", "hook", "iter", "state", "old", "new"],
                &rows,
            );
        }
        for e in &self.errors {
            let effect = match e.fails {
                "open" => "fails open: a warning, the session goes on",
                _ => "fails closed: the session fails",
            };
            let _ = writeln!(
                out,
                "error: decision {} ({}, iteration {}): {} ({effect})",
                e.index, e.hook, e.iteration, e.error
            );
        }
        for i in &self.incomplete {
            let _ = writeln!(
                out,
                "not replayed: decision {} ({}, iteration {}): missing blob {}",
                i.index,
                i.hook,
                i.iteration,
                i.missing_blobs.join(", ")
            );
        }
        let _ = writeln!(out, "recorded:  {}", path(&self.recorded_path));
        let _ = writeln!(out, "simulated: {}", path(&self.simulated_path));
        if let Some(d) = &self.divergence {
            let _ = writeln!(out, "diverged: {d}");
        }
        for n in &self.notes {
            let _ = writeln!(out, "  {n}");
        }
        if let Some(s) = &self.stopped {
            let _ = writeln!(out, "stopped: {s}");
        }
        out
    }
}

fn path(states: &[SessionState]) -> String {
    if states.is_empty() {
        return "(no transition recorded)".to_string();
    }
    states
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" → ")
}

/// Left-aligned columns, two spaces apart, header first.
fn table<const N: usize>(out: &mut String, header: [&str; N], rows: &[[String; N]]) {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::from("  ");
        for (i, cell) in cells.enumerate() {
            text.push_str(cell);
            if i + 1 < N {
                let pad = widths[i] - cell.chars().count() + 2;
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
}
