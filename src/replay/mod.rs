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
//!   vetoes, limits and all — for as long as the facts allow; where the new policy would need
//!   a fact never recorded (a run that never happened), it stops and says so.

mod describe;
mod diff;
mod error;
mod facts;
mod prefetch;
mod report;
mod reuse;
mod simulate;

#[cfg(test)]
mod tests;

pub use error::ReplayError;
pub use facts::{RecordedDecision, Recording};
pub use report::{Difference, IncompleteDecision, ReplayFailure, ReplayReport};

use crate::pipeline::Redactor;
use crate::policy::PolicyHost;
use crate::session::PolicyJudge;
use crate::store::Log;
use reuse::Reusing;

/// How [`replay_with`] compares answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Also count a decision as different when only its reason (or confidence, or error
    /// message) changed. Off by default: reasons are prose and change with every wording tweak.
    pub include_reasons: bool,
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
    let mut judge = Reusing::new(
        PolicyJudge::new(policy, 1, &redactor),
        rec,
        opts.include_reasons,
    );
    let sim = simulate::simulate(rec, policy, &mut judge);
    let diff = judge.finish();
    ReplayReport {
        policy_hash: policy.hash().to_string(),
        decisions: rec.decisions.len(),
        replayed: diff.replayed,
        differences: diff.differences,
        errors: diff.errors,
        incomplete: diff.incomplete,
        recorded_path: rec.path(),
        simulated_path: sim.path,
        divergence: sim.divergence,
        notes: sim.notes,
        stopped: sim.stopped,
        complete: rec.final_state().is_some_and(|s| s.is_terminal()),
    }
}
