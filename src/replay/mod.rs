//! Replaying a recorded session under another policy (`oneshot policy replay`).
//!
//! # How it works
//!
//! [`load_decisions`] reads the `decision`, `blob` and `state_change` records of a session's
//! log (`docs/log-format.md`) into a [`Recorded`]: typed hook inputs with blob references
//! resolved and equal contexts shared. [`replay`] then asks the new policy every recorded
//! question through the same [`PolicyHost`] methods the engine uses (so built-in defaults stand
//! in for missing hooks), lists the answers that differ, and walks the session forward with the
//! machine table: on the recorded path while the answers agree, then on its own as far as the
//! recorded facts allow, saying where and why it had to stop.

mod compare;
mod error;
mod load;
mod record;
mod report;
mod simulate;

pub use error::ReplayError;
pub use load::load_decisions;
pub use record::{
    DecisionInput, DecisionResult, Hook, Recorded, RecordedDecision, RecordedTransition,
};
pub use report::{Difference, IncompleteDecision, ReplayFailure, ReplayReport};

use crate::policy::PolicyHost;
use compare::{ask, describe_pair, same};
use simulate::Simulation;

/// How [`replay_with`] compares answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Also count a decision as different when only its reason (or confidence, or error
    /// message) changed. Off by default: reasons are prose and change with every wording tweak.
    pub include_reasons: bool,
}

/// Re-runs every recorded decision through `policy` and simulates the session under it, with
/// the default [`ReplayOptions`].
pub fn replay(recorded: &Recorded, policy: &PolicyHost) -> ReplayReport {
    replay_with(recorded, policy, ReplayOptions::default())
}

/// [`replay`] with options.
pub fn replay_with(recorded: &Recorded, policy: &PolicyHost, opts: ReplayOptions) -> ReplayReport {
    let transitions = &recorded.transitions;
    let mut sim = Simulation::new(policy, transitions);
    let mut report = ReplayReport {
        policy_hash: policy.hash().to_string(),
        decisions: recorded.decisions.len(),
        replayed: 0,
        differences: Vec::new(),
        errors: Vec::new(),
        incomplete: Vec::new(),
        recorded_path: recorded.path(),
        simulated_path: Vec::new(),
        divergence: None,
        notes: Vec::new(),
        stopped: None,
        complete: recorded.final_state.is_some_and(|s| s.is_terminal()),
    };
    let mut t = 0;
    for d in &recorded.decisions {
        while t < transitions.len() && transitions[t].record < d.record {
            sim.transition(t);
            t += 1;
        }
        if !d.is_complete() {
            report.incomplete.push(IncompleteDecision {
                index: d.index,
                hook: d.hook,
                iteration: d.iteration,
                state: d.state,
                missing_blobs: d.missing_blobs.clone(),
            });
            sim.unknown(d);
            continue;
        }
        report.replayed += 1;
        let new = ask(policy, &d.input);
        match &new {
            Ok(result) if !same(&d.result, result, opts.include_reasons) => {
                let (old, new) = describe_pair(&d.result, result, opts.include_reasons);
                report.differences.push(Difference {
                    index: d.index,
                    hook: d.hook,
                    iteration: d.iteration,
                    state: d.state,
                    old,
                    new,
                });
            }
            Ok(_) => {}
            Err(e) => report.errors.push(ReplayFailure {
                index: d.index,
                hook: d.hook,
                iteration: d.iteration,
                state: d.state,
                error: e.to_string(),
                kind: e.kind().to_string(),
            }),
        }
        sim.decision(d, &new);
    }
    for i in t..transitions.len() {
        sim.transition(i);
    }
    report.simulated_path = sim.path;
    report.divergence = sim.divergence;
    report.notes = sim.notes;
    report.stopped = sim.stopped;
    report
}
