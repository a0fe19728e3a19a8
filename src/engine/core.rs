//! The parts of the engine a step of the decision core needs, borrowed apart from the rest, so
//! that the core can answer while another part is busy (the log, while a check runs).

use crate::pipeline::Redactor;
use crate::pipeline::now_ms;
use crate::policy::ReloadingPolicy;
use crate::session::{Effect, Event, PolicyJudge, Session};
use std::sync::Arc;

/// The session and its policy, for one step at a time.
pub(super) struct Core<'a> {
    pub session: &'a mut Session,
    pub slot: &'a ReloadingPolicy,
    pub redactor: &'a Arc<Redactor>,
}

impl Core<'_> {
    /// One step of the core on `event`, judged by the policy in force now.
    pub fn step(&mut self, event: Event) -> Vec<Effect> {
        let mut judge =
            PolicyJudge::new(self.slot.current(), self.slot.generation(), self.redactor);
        self.session.step(now_ms(), event, &mut judge)
    }
}
