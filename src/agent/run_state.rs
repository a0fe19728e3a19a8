//! A run's lifecycle (seed 004 §2), as the timeline derives it from the agent's events.

use serde::Serialize;

/// Where a run stands, derived from its events (seed 004 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunState {
    /// Nothing heard yet.
    Queued,
    /// A model call is under way (or a tool runs and the next call follows); no output yet.
    AwaitingResponse,
    /// The model is producing a message.
    Streaming,
    /// The model ended its turn; the final result is on its way.
    Finalizing,
    /// The run ended with a successful result.
    Completed,
    /// The run ended after the executor asked it to stop.
    Interrupted,
    /// The run ended in failure (a failed result, or a stream that ended without one).
    Error,
}

impl RunState {
    /// Whether the run is over.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunState::Completed | RunState::Interrupted | RunState::Error
        )
    }
}
