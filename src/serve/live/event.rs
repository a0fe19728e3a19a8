//! What a live stream carries: typed events, written as server-sent events.

use super::cursor::Cursor;
use axum::response::sse::Event;

/// One event of a live stream.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LiveEvent {
    /// Lines of a session's account, rendered from one store entry.
    Line {
        /// The stream's position after it.
        at: Cursor,
        /// The session whose account grows.
        session: String,
        /// The entry's number.
        entry: u64,
        /// The `<li>`s.
        html: String,
    },
    /// The job itself changed (a transition, a verb, its lease handed back): the page reads
    /// it again.
    Job {
        /// The stream's position after it.
        at: Cursor,
        /// The state it is in now.
        state: String,
        /// Its steps now.
        steps: u32,
    },
    /// A job on the board changed (or was removed): the board reads the store again.
    Board {
        /// The job.
        job: String,
        /// Its state now; `None` when it is gone.
        state: Option<String>,
        /// Its steps now.
        steps: u32,
    },
    /// The reader fell behind: the stream ends here, and the browser reconnects from the
    /// last event it has, replayed from the store — never a thinned stream.
    Lagged,
    /// The token or browser session the stream was opened with is no longer good (revoked,
    /// signed out, expired): the stream ends here.
    SignedOut,
}

impl LiveEvent {
    /// The job-stream position this event leaves its reader at.
    pub(crate) fn at(&self) -> Option<Cursor> {
        match self {
            LiveEvent::Line { at, .. } | LiveEvent::Job { at, .. } => Some(*at),
            LiveEvent::Board { .. } | LiveEvent::Lagged | LiveEvent::SignedOut => None,
        }
    }

    /// As a server-sent event: its name, its data (one JSON object) and, for a job stream,
    /// its id.
    pub(crate) fn sse(&self) -> Event {
        let (name, data) = match self {
            LiveEvent::Line {
                session,
                entry,
                html,
                ..
            } => (
                "line",
                serde_json::json!({"session": session, "entry": entry, "html": html}),
            ),
            LiveEvent::Job { state, steps, .. } => {
                ("job", serde_json::json!({"state": state, "steps": steps}))
            }
            LiveEvent::Board { job, state, steps } => (
                "board",
                serde_json::json!({"job": job, "state": state, "steps": steps}),
            ),
            LiveEvent::Lagged => (
                "lagged",
                serde_json::json!({"why": "this reader fell behind; reconnect to replay from the store"}),
            ),
            LiveEvent::SignedOut => (
                "signedout",
                serde_json::json!({"why": "the token or sign-in this page used is no longer good; sign in again"}),
            ),
        };
        let event = Event::default().event(name).data(data.to_string());
        match self.at() {
            Some(at) => event.id(at.to_string()),
            None => event,
        }
    }
}
