//! How driving a session ended.

use super::Reason;
use crate::machine::SessionState;

/// The state a session stopped in, with the reason recorded for it. (The CLI's exit code for it
/// is `src/cli/exit.rs`'s business.)
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
