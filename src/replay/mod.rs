//! Replaying a recorded session under another policy (`oneshot policy replay`).
//!
//! # How it works
//!
//! [`Recording::from_log`] sorts a session's typed log ([`crate::store::Log`]): the facts the
//! decision core was given, the decisions it recorded, the transitions it made. [`replay`]
//! then does two things with another policy:
//!
//! - it asks every recorded question again, with its recorded input, through the same
//!   [`Decide`](crate::session::Decide) calls the engine makes, and lists the answers that
//!   differ or fail;
//! - it gives the recorded facts to a fresh session's decision core
//!   ([`Session::step`](crate::session::Session::step)) with the new policy deciding, in
//!   their recorded order and at their recorded times. Because the core is the engine's own,
//!   the simulated path is the path a real run under that policy takes — failure modes, guard
//!   vetoes, limits and all. Where the new path leaves the recorded one and needs a run that
//!   never happened (a worker run with a new critique, an iteration the recording never
//!   reached), the recorded run of that iteration (or the last one before it) stands in,
//!   output as recorded, under an assumption the report prints — so the report answers where
//!   the session would have ended. [`ReplayOptions::stop_at_divergence`] stops there instead.

mod describe;
mod diff;
mod error;
mod facts;
mod prefetch;
mod report;
mod reuse;
mod simulate;
mod stand_in;

#[cfg(test)]
mod message_tests;
#[cfg(test)]
mod tests;

pub use error::ReplayError;
pub use facts::{RecordedDecision, Recording};
pub use report::{
    Difference, DifferenceKind, Ending, IncompleteDecision, ReplayFailure, ReplayReport,
    ReplayVerdict,
};

use crate::pipeline::Redactor;
use crate::policy::PolicyHost;
use crate::session::PolicyJudge;
use crate::store::Log;
use reuse::Reusing;

/// How [`replay_with`] replays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Stop where the simulated path leaves the recorded one, instead of going on with the
    /// recorded runs standing in for the runs the new path needs.
    pub stop_at_divergence: bool,
}

/// Replays the session recorded in `log` under `policy`, with the default [`ReplayOptions`].
pub fn replay(log: &Log, policy: &PolicyHost) -> Result<ReplayReport, ReplayError> {
    replay_with(log, policy, ReplayOptions::default())
}

/// [`replay`] with options.
pub fn replay_with(
    log: &Log,
    policy: &PolicyHost,
    opts: ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let rec = Recording::from_log(log)?;
    Ok(replay_recording(&rec, policy, opts))
}

/// Replays an already sorted recording.
///
/// The simulated core asks its questions through [`reuse`](self): every recorded question is
/// asked again as the core gets to it, and the core reuses that answer wherever it asks the
/// very same question, so a session whose path does not change costs one hook call per
/// decision, not two.
pub fn replay_recording(rec: &Recording, policy: &PolicyHost, opts: ReplayOptions) -> ReplayReport {
    // The simulated core redacts the reasons it stores as the engine would; the re-asked
    // questions store nothing, so they share its redactor.
    let redactor = Redactor::from_env(policy.redact_patterns())
        .unwrap_or_else(|_| Redactor::new(&[], Vec::new()).expect("no patterns compile"));
    let mut judge = Reusing::new(PolicyJudge::new(policy, 1, &redactor), rec);
    let sim = simulate::simulate(rec, policy, &mut judge, opts);
    let diff = judge.finish();
    let mut report = ReplayReport {
        policy_hash: policy.hash().to_string(),
        verdict: ReplayVerdict::Same,
        decisions: rec.decisions.len(),
        replayed: diff.replayed,
        differences: diff.differences,
        errors: diff.errors,
        incomplete: diff.incomplete,
        recorded_path: rec.path(),
        simulated_path: sim.path,
        recorded_end: rec.ending(),
        simulated_end: sim.end,
        divergence: sim.divergence,
        assumptions: sim.assumptions,
        notes: sim.notes,
        stopped: sim.stopped,
        complete: rec.final_state().is_some_and(|s| s.is_terminal()),
    };
    report.judge();
    report
}
