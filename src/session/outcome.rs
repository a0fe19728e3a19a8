//! How driving a session ended.

use super::Reason;
use crate::machine::SessionState;

/// The state a session stopped in, with the reason recorded for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The session id.
    pub session_id: String,
    /// Where it stopped: a terminal state, INTERRUPTED, or a checkpoint state when an
    /// interrupt arrived between two processes.
    pub state: SessionState,
    /// The last history entry's reason.
    pub reason: Option<Reason>,
    /// It stopped short of a terminal state because of an interrupt.
    pub paused: bool,
}

impl Outcome {
    /// The CLI exit code: 0 COMPLETED, 1 FAILED, 3 REJECTED, 130 for a session that stopped
    /// short of a terminal state (it only does when interrupted).
    pub fn exit_code(&self) -> i32 {
        match self.state {
            SessionState::Completed => 0,
            SessionState::Rejected => 3,
            SessionState::Failed => 1,
            _ => 130,
        }
    }
}
