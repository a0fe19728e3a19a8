//! A human's message for a running agent (`oneshot say`), as a driver sees it, and what the
//! driver did with it.

/// A message for the running agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Say {
    /// Its id (a UUID): Claude keeps it on the user line, so its `isReplay` echo and the
    /// transcript name it; the others confirm by the request that carried it.
    pub id: String,
    /// The text (already redacted).
    pub text: String,
    /// Preempt the running turn (`--now`): Claude's `"priority":"now"`, a Codex steer (which
    /// drops the sampling in flight), an ACP cancel and re-prompt.
    pub now: bool,
}

/// What a driver did with a [`Say`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivery {
    /// Written to the agent's input; the agent confirms taking it in with
    /// [`AgentEvent::MessageTaken`](super::AgentEvent::MessageTaken).
    Sent,
    /// Kept by the driver until the agent can take it (an ACP prompt is running: a second one
    /// would cancel it); written, and confirmed, when the running prompt returns.
    Held,
    /// This protocol cannot take a message while it runs (Aider, Cline, `codex exec`, a
    /// command): the next worker prompt carries it.
    NextPrompt,
}

impl Delivery {
    /// The word `oneshot log` and the `message` record use.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::Sent => "sent",
            Delivery::Held => "held",
            Delivery::NextPrompt => "next_prompt",
        }
    }
}
