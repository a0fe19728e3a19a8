//! What an agent tells the session while it runs, beyond its output: its own session id, and
//! that its run failed.

use super::AgentFailure;
use super::step::Step;
use crate::store::ProcessEvent;

impl Step<'_> {
    /// The running agent named its session: journaled before anything could need it (a crash
    /// now still resumes the conversation).
    pub(super) fn agent_session(&mut self, id: String) {
        let Some(role) = self.running_role() else {
            return self.unexpected("an agent session");
        };
        if self.s.agents.set_session(role, id.clone()) {
            self.journal();
        }
        self.process(role, ProcessEvent::AgentSession { session_id: id });
    }

    /// The running agent reported a failed run; what it means is decided when it exits.
    pub(super) fn agent_failed(&mut self, mut failure: AgentFailure) {
        let Some(role) = self.running_role() else {
            return self.unexpected("an agent failure");
        };
        failure.message = self.d.redact(&failure.message).into_owned();
        if let Some(run) = self.s.phase.run_mut() {
            run.failure = Some(failure.clone());
        }
        self.process(role, ProcessEvent::AgentFailed { failure });
    }

    /// The running agent asks to use a tool: the policy's `permit` answers (a failed hook
    /// denies).
    pub(super) fn permission(
        &mut self,
        request_id: String,
        tool: String,
        input: serde_json::Value,
    ) {
        let Some(role) = self.running_role() else {
            return self.unexpected("a tool-permission request");
        };
        let answer = self.ask_permit(role, &tool, &input);
        self.out.push(super::Effect::Permit {
            request_id,
            allow: answer.allow,
            reason: answer.reason,
            input,
        });
    }

    /// The role whose process runs now (started, not yet exited).
    fn running_role(&self) -> Option<crate::executor::Role> {
        let run = self.s.phase.run()?;
        (run.process.is_some() && run.exited.is_none())
            .then(|| self.s.phase.role())
            .flatten()
    }
}
