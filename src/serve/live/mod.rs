//! The live stream: one server-sent-event stream per open page, over what the store holds.
//!
//! - `GET /jobs/{id}/events` — a job page's stream: each new log entry's account lines
//!   (`line`), and a `job` event when the job itself moved. Every event's id is the store's
//!   own numbers (`T.E`: the job's transitions seen, its last log entry seen — both numbered
//!   per job with no gap), so a browser that reconnects sends `Last-Event-ID` and gets exactly
//!   what it lacks, replayed from the store; the page sends the cursor it was rendered at as
//!   `?after=T.E` on its first connect. A finished job's stream is the same replay.
//! - `GET /events` — the board's (and the inbox's) stream: which jobs changed; the page reads
//!   itself again.
//!
//! One [`hub`] thread per process waits for the store to change (heard, not polled) and
//! sends each topic's news once to all its readers; a reader that falls [`hub::CAPACITY`]
//! events behind is sent `lagged` and dropped, and its reconnect replays — a stream is never
//! silently thinned. A stream whose token or sign-in is no longer good is sent `signedout`
//! and ends (`auth`).

mod auth;
mod board_topic;
mod cursor;
mod event;
pub(crate) mod hub;
mod job_topic;
#[cfg(test)]
mod tests;

pub(crate) use cursor::Cursor;

use super::App;
use super::boundary::{Signed, refuse, wants_json};
use auth::{Credential, Watch};
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use event::LiveEvent;
use futures_util::stream::{self, Stream};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// How long a browser waits before it reconnects a dropped stream.
const RETRY: Duration = Duration::from_secs(1);

/// How often an idle stream sends a comment, so a proxy or a dead peer is found out.
const KEEP_ALIVE: Duration = Duration::from_secs(30);

/// The query a page's first connect carries.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct After {
    /// The cursor the page was rendered at.
    after: Option<String>,
}

/// `GET /jobs/{id}/events`.
pub(crate) async fn job(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<After>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
) -> Response {
    // A reconnect's `Last-Event-ID` is newer than the page's `after`.
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(Cursor::parse)
        .or_else(|| q.after.as_deref().and_then(Cursor::parse));
    let hub = app.hub.clone();
    let joined = tokio::task::spawn_blocking(move || {
        let topic = hub.job(&id)?;
        topic.join(hub.store(), after)
    })
    .await;
    match joined {
        Ok(Ok(j)) => sse(j.replay, j.rx, watch(&app, &signed)),
        Ok(Err(e)) => super::views::store_failed(&e, &headers),
        Err(e) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            wants_json(&headers),
            &e.to_string(),
        ),
    }
}

/// `GET /events`: the board's stream.
pub(crate) async fn board(
    State(app): State<App>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
) -> Response {
    let hub = app.hub.clone();
    match tokio::task::spawn_blocking(move || hub.board().map(|b| b.join())).await {
        Ok(Ok(rx)) => sse(Vec::new(), rx, watch(&app, &signed)),
        Ok(Err(e)) => super::views::store_failed(&e, &headers),
        Err(e) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            wants_json(&headers),
            &e.to_string(),
        ),
    }
}

/// The watch of what the stream was opened with.
fn watch(app: &App, signed: &Signed) -> Arc<Watch> {
    let credential = match (&signed.bearer, &signed.cookie) {
        (Some(b), _) => Credential::Bearer(b.clone()),
        (None, Some(c)) => Credential::Cookie(c.clone()),
        // The boundary lets no stream in without one; an empty bearer is never good.
        (None, None) => Credential::Bearer(String::new()),
    };
    app.hub.watch(credential)
}

/// A reader's stream: what is left to replay, the live events, and its credential's watch.
struct Reader {
    replay: VecDeque<Arc<LiveEvent>>,
    rx: broadcast::Receiver<Arc<LiveEvent>>,
    watch: Arc<Watch>,
}

/// Where a reader's stream is.
enum Phase {
    /// The retry interval not sent yet.
    Start(Reader),
    /// Replaying, then live.
    Live(Reader),
    /// Ended.
    Done,
}

/// The replay, then the live events, as a response.
fn sse(
    replay: Vec<Arc<LiveEvent>>,
    rx: broadcast::Receiver<Arc<LiveEvent>>,
    watch: Arc<Watch>,
) -> Response {
    Sse::new(events(replay.into(), rx, watch))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}

fn events(
    replay: VecDeque<Arc<LiveEvent>>,
    rx: broadcast::Receiver<Arc<LiveEvent>>,
    watch: Arc<Watch>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let reader = Reader { replay, rx, watch };
    stream::unfold(Phase::Start(reader), |phase| async move {
        match phase {
            Phase::Start(r) => Some((
                Ok(Event::default().retry(RETRY).comment("oneshot live")),
                Phase::Live(r),
            )),
            Phase::Live(mut r) => {
                if let Some(e) = r.replay.pop_front() {
                    return Some((Ok(e.sse()), Phase::Live(r)));
                }
                tokio::select! {
                    got = r.rx.recv() => match got {
                        Ok(e) => Some((Ok(e.sse()), Phase::Live(r))),
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            Some((Ok(LiveEvent::Lagged.sse()), Phase::Done))
                        }
                        Err(broadcast::error::RecvError::Closed) => None,
                    },
                    () = r.watch.gone.notified() => {
                        Some((Ok(LiveEvent::SignedOut.sse()), Phase::Done))
                    }
                }
            }
            Phase::Done => None,
        }
    })
}
