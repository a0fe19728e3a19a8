//! What to say about how a session ended: the cause behind the last reason, the iterations
//! used and the time taken. Shared by the final line on the terminal and `run --json`.

use oneshot::Reason;
use oneshot::machine::SessionState;
use oneshot::session::Session;
use std::time::Duration;

/// What led to a recovery that ended the session: the last reason of a salvage (`no files
/// changed`) is its consequence; the cause is why the worker was being recovered at all (it
/// exited 1, went silent, timed out).
pub fn cause(session: &Session) -> Option<&Reason> {
    let last = session.history.last()?;
    if !matches!(last.reason, Some(Reason::Salvaged { .. })) {
        return None;
    }
    session
        .history
        .iter()
        .rev()
        .skip(1)
        .take_while(|h| h.state == SessionState::RecoveryPending)
        .find_map(|h| h.reason.as_ref())
}

/// Time since the session was created (pauses included, for a resumed one).
pub fn elapsed(session: &Session) -> Duration {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.saturating_sub(Duration::from_millis(session.created_ms))
}
