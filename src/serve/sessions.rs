//! The routes of the state directory's sessions: `GET /sessions/{id}`, the session's page
//! ([`super::pages::session`]), and `POST /sessions/{id}/stop` (the `operate` scope, checked at
//! the boundary): what `oneshot stop ID` does, through the same library call
//! ([`crate::store::stop`]). Sessions keep no audit trail in the job store and none is made
//! for them here: the session's own log records the pause, as it records one from
//! `oneshot stop` or Ctrl-C; the answer is a page (or JSON) saying where the session paused.

use super::App;
use super::boundary::{Signed, refuse, wants_json};
use super::views::{esc, page as plain_page, viewer};
use crate::store::{StopError, Stopped, Store, StoreError};
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use std::time::Duration;

/// How long a stop from the page waits for the session to let go before answering: long
/// enough for an agent that stops promptly, short enough for a browser to wait.
const WAIT: Duration = Duration::from_secs(10);

/// The status of a session read that failed.
fn status_of(e: &StoreError) -> StatusCode {
    match e {
        StoreError::NotFound { .. } | StoreError::Ambiguous { .. } => StatusCode::NOT_FOUND,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// `GET /sessions/{id}`.
pub(super) async fn page(
    State(app): State<App>,
    Path(id): Path<String>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
) -> Response {
    let viewer = viewer(&signed);
    let dir = app.state_dir.clone();
    let json = wants_json(&headers);
    match tokio::task::spawn_blocking(move || super::pages::session(&dir, &id, &viewer)).await {
        Ok(Ok(html)) => Html(html).into_response(),
        Ok(Err(e)) => refuse(status_of(&e), json, &e.to_string()),
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, json, &e.to_string()),
    }
}

/// `POST /sessions/{id}/stop`: asks the oneshot driving the session to pause and waits up to
/// [`WAIT`] for it; 409 when no live oneshot drives it.
pub(super) async fn stop(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let json = wants_json(&headers);
    let dir = app.state_dir.clone();
    let done = tokio::task::spawn_blocking(move || {
        let session = Store::new(&*dir)
            .open(&id)
            .map_err(|e| (status_of(&e), format!("stop session {id}: {e}")))?;
        let id = session.id().to_string();
        crate::store::stop(&session, Some(WAIT))
            .map(|s| (id, s))
            .map_err(|e| {
                let status = match &e {
                    StopError::NotRunning { .. } => StatusCode::CONFLICT,
                    // Asked, but its agent is still stopping: accepted, not done.
                    StopError::StillRunning { .. } => StatusCode::ACCEPTED,
                    StopError::Store { source, .. } => status_of(source),
                    _ => StatusCode::INTERNAL_SERVER_ERROR,
                };
                (status, e.to_string())
            })
    })
    .await;
    let (id, stopped) = match done {
        Ok(Ok(s)) => s,
        Ok(Err((status, m))) => return refuse(status, json, &m),
        Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, json, &e.to_string()),
    };
    let state = match stopped {
        Stopped::LetGo { state } => state,
        // Not asked for: a stop from the page waits.
        Stopped::Asked { pid } => {
            return refuse(
                StatusCode::ACCEPTED,
                json,
                &format!("asked oneshot (pid {pid}) to pause session {id}"),
            );
        }
    };
    let said = if state.is_terminal() {
        format!("Session {id} ended before it could pause: {state}.")
    } else {
        format!("Session {id} paused in {state}; continue it with oneshot resume {id}.")
    };
    if json {
        return Json(serde_json::json!({
            "id": id,
            "stopped": !state.is_terminal(),
            "state": state.as_str(),
        }))
        .into_response();
    }
    let body = format!(
        "<h1>Stopped</h1><p>{}</p><p><a href=\"{}\">Back to the session</a> · \
         <a href=\"/\">the board</a></p>",
        esc(&said),
        esc(&super::pages::session_path(&id))
    );
    Html(plain_page("Stopped", &body)).into_response()
}
