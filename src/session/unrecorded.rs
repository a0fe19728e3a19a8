//! A step for `oneshot policy replay`: the same rules, without the records only a log needs.
//!
//! Replay runs a whole recorded session through the core again and reads none of the log
//! records the core would build: it knows what it asked through its own [`Decide`], and the
//! path from the reports. Building a `decision` record per question — a context of owned
//! strings, the policy reference, the record — cost more than the question itself, so this
//! entry point builds no records and asks every question with one reused context.

use super::step::Step;
use super::{Decide, Effect, Event, Session};
use crate::policy::HookCtx;

/// What [`Session::step_unrecorded`] keeps from one step to the next, so that a step
/// allocates only what it hands out.
#[derive(Debug, Default)]
pub(crate) struct StepBuffers {
    /// What the step itself uses.
    pub(crate) scratch: Scratch,
    /// The last step's effects, in order.
    pub(crate) effects: Vec<Effect>,
}

/// What an unrecorded step asks with and notes down.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// The context every question is asked with, overwritten per question.
    pub(super) ctx: HookCtx,
    /// How many questions the last step asked.
    pub(crate) asked: usize,
    /// For each transition of the last step, in order: how many questions the step had asked
    /// before it (what the `decision` records before its `state_change` record would say).
    pub(crate) moves: Vec<usize>,
}

impl Session {
    /// [`Session::step`] without [`Effect::Record`]s: the same questions, moves and session
    /// value, and the same other effects in the same order, left in `buffers.effects`.
    pub(crate) fn step_unrecorded(
        &mut self,
        now: u64,
        event: Event,
        decide: &mut dyn Decide,
        buffers: &mut StepBuffers,
    ) {
        let mut out = std::mem::take(&mut buffers.effects);
        out.clear();
        buffers.scratch.asked = 0;
        buffers.scratch.moves.clear();
        let mut step = Step {
            s: self,
            d: decide,
            now,
            out,
            unrecorded: Some(&mut buffers.scratch),
        };
        step.on(event);
        buffers.effects = step.out;
    }
}

impl Step<'_> {
    /// Whether this step builds log records (every step but replay's).
    pub(super) fn recording(&self) -> bool {
        self.unrecorded.is_none()
    }
}
