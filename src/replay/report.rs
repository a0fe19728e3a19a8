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
    /// The one answer: nothing differs, something differs, or decisions fail under the policy.
    pub verdict: ReplayVerdict,
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
    /// How the recorded session ended (or where it stands, when it has not ended).
    pub recorded_end: Option<Ending>,
    /// Where the session ends under the new policy, as far as the recorded facts (and, past
    /// the divergence, the recorded runs standing in for new ones) tell.
    pub simulated_end: Option<Ending>,
    /// Where the simulated path first left the recorded one, and why.
    pub divergence: Option<String>,
    /// What the replay took as given to go on past the divergence: the runs the new path
    /// needs that were never recorded are the recorded ones, as they were (e.g. `the worker's
    /// output is taken as recorded from iteration 2 on`).
    pub assumptions: Vec<String>,
    /// What the new policy decided after the divergence (vetoes, failures, limits).
    pub notes: Vec<String>,
    /// Why the simulation stopped before a terminal state, e.g. `iteration 3 of the worker
    /// never ran: its output was never recorded`.
    pub stopped: Option<String>,
    /// The recorded session reached a terminal state; `false` for a session still running (or
    /// interrupted), whose log is replayed as far as it goes.
    pub complete: bool,
}

/// The one answer of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayVerdict {
    /// Every recorded decision gets the same answer, reason included, and the session takes
    /// the same path to the same end.
    Same,
    /// An answer or a reason differs, or the path or the end does.
    Differs,
    /// Decisions fail under the new policy (and maybe others differ too).
    Fails,
}

/// Where a session ends (or stands).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ending {
    /// The state.
    pub state: SessionState,
    /// The worker iteration.
    pub iteration: u32,
    /// Why it is there, as a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at iteration {}", self.state, self.iteration)
    }
}

/// What about a decision differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum DifferenceKind {
    /// The answer itself: another verdict, salvage, guard word or prompt.
    Answer,
    /// Only its reason (or confidence): the same word, other words for it — a retry's reason is
    /// the critique in the next prompt.
    Reason,
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
    /// What differs.
    pub kind: DifferenceKind,
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
    /// Something differs: an answer or a reason, a failure, the path or the end. What
    /// `--exit-code` tests; the same as a verdict other than [`ReplayVerdict::Same`].
    pub fn differs(&self) -> bool {
        self.verdict != ReplayVerdict::Same
    }

    /// The verdict these findings make: one, never two that disagree.
    pub(crate) fn judge(&mut self) {
        let ends = |e: &Option<Ending>| e.as_ref().map(|e| (e.state, e.iteration));
        self.verdict = if !self.errors.is_empty() {
            ReplayVerdict::Fails
        } else if !self.differences.is_empty()
            || self.divergence.is_some()
            || self.simulated_path != self.recorded_path
            || ends(&self.simulated_end) != ends(&self.recorded_end)
        {
            ReplayVerdict::Differs
        } else {
            ReplayVerdict::Same
        };
    }

    /// The verdict as the report's first sentence.
    fn headline(&self) -> String {
        let end = |e: &Option<Ending>| e.as_ref().map_or("nowhere".to_string(), Ending::to_string);
        let recorded = end(&self.recorded_end);
        let simulated = end(&self.simulated_end);
        let ends = if recorded == simulated {
            format!("the session ends the same, {simulated}")
        } else {
            format!("under this policy the session ends {simulated} (recorded: {recorded})")
        };
        let ends = if self.stopped.is_some() && self.simulated_end != self.recorded_end {
            format!("{ends}, as far as the replay could go")
        } else {
            ends
        };
        match self.verdict {
            ReplayVerdict::Same => {
                format!("no difference: every recorded decision gets the same answer and {ends}")
            }
            ReplayVerdict::Differs if self.differences.is_empty() => format!(
                "differs: no recorded decision gets another answer, but the path changes — {ends}"
            ),
            ReplayVerdict::Differs => format!(
                "differs: {} decision(s) answered differently; {ends}",
                self.differences.len()
            ),
            ReplayVerdict::Fails => format!(
                "fails: {} decision(s) fail under this policy; {ends}",
                self.errors.len()
            ),
        }
    }

    /// A plain-text report: the verdict, the decisions that differ as a table (hook, iteration,
    /// old → new), failures, then the recorded and simulated paths, where they parted, and what
    /// the replay assumed past that.
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
        let _ = writeln!(out, "verdict: {}", self.headline());
        if !self.differences.is_empty() {
            let rows: Vec<[String; 6]> = self
                .differences
                .iter()
                .map(|d| {
                    let hook = match d.kind {
                        DifferenceKind::Answer => d.hook.to_string(),
                        DifferenceKind::Reason => format!("{} (reason)", d.hook),
                    };
                    [
                        d.index.to_string(),
                        hook,
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
            let _ = writeln!(out, "diverged:  {d}");
        }
        for a in &self.assumptions {
            let _ = writeln!(out, "assumed:   {a}");
        }
        // The same decision again and again (a retry each iteration) reads once, counted.
        let mut notes = self.notes.iter().peekable();
        while let Some(n) = notes.next() {
            let mut times = 1;
            while notes.next_if(|m| *m == n).is_some() {
                times += 1;
            }
            match times {
                1 => _ = writeln!(out, "  {n}"),
                _ => _ = writeln!(out, "  {n} (×{times})"),
            }
        }
        if let Some(s) = &self.stopped {
            let _ = writeln!(out, "stopped:   {s}");
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
