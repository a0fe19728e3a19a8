//! Saying something to a session's worker (`oneshot say`, and the dashboard through the same
//! call): the message, redacted with the session policy's patterns, is posted to the
//! session's inbox, where the oneshot that drives it — now, or at the next `resume` — takes
//! it in.

use super::{SessionDir, StoreError};
use crate::session::{MessageStatus, Said};

/// Why a message was not posted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SayError {
    /// Nothing to say.
    #[error("say to session {id}: the message is empty; give its text (or --file, or - for stdin)")]
    Empty {
        /// The session.
        id: String,
    },
    /// The session has ended: no worker will ever read it.
    #[error(
        "say to session {id}: it has ended ({state}); no worker will run again to read the \
         message — start a new session, or `oneshot run` with the message in the task"
    )]
    Ended {
        /// The session.
        id: String,
        /// Its terminal state.
        state: crate::machine::SessionState,
    },
    /// Its state file, or the inbox, could not be read or written.
    #[error("say to session {id}: {source}")]
    Store {
        /// The session.
        id: String,
        /// What failed.
        #[source]
        source: StoreError,
    },
    /// The message could not be redacted (a bug, said as one).
    #[error("say to session {id}: {source}")]
    Seal {
        /// The session.
        id: String,
        /// What failed.
        #[source]
        source: crate::pipeline::SealError,
    },
}

/// Posts `text` from `actor`, said at `now_ms`, to session `dir`'s inbox (`now`: preempt the
/// running turn). Returns the message as posted (redacted; its id is what the log's `message`
/// records name).
pub fn say(
    dir: &SessionDir,
    text: &str,
    now: bool,
    actor: &str,
    now_ms: u64,
) -> Result<Said, SayError> {
    let id = dir.id().to_string();
    if text.trim().is_empty() {
        return Err(SayError::Empty { id });
    }
    let session = dir.read_state().map_err(|source| SayError::Store {
        id: id.clone(),
        source,
    })?;
    let state = session.state();
    if state.is_terminal() {
        return Err(SayError::Ended { id, state });
    }
    let said = Said {
        id: uuid::Uuid::new_v4().to_string(),
        actor: actor.to_string(),
        ts: now_ms,
        text: text.trim_end().to_string(),
        now,
        status: MessageStatus::Received,
        taken_ms: None,
        taken_iteration: None,
    };
    let redactor = crate::policy::redactor(session.policy.path.as_deref());
    let sealed = redactor.seal(&said).map_err(|source| SayError::Seal {
        id: id.clone(),
        source,
    })?;
    dir.post(&sealed)
        .map_err(|source| SayError::Store { id, source })?;
    Ok(sealed.into_inner())
}
