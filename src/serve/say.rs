//! Saying something to a worker from the dashboard (`operate`, checked at the boundary):
//! `POST /sessions/{id}/say` and `POST /jobs/{id}/say`, through the same library calls as
//! `oneshot say` ([`crate::store::say`], [`crate::job::say`]), the token's name as who said it.
//! The form's fields: `text`, and `now` (any value: preempt the running turn).

use super::App;
use super::boundary::{Signed, refuse};
use super::views::{esc, page};
use crate::job::store::JobStoreError;
use crate::session::short_id as short;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

/// The say form.
#[derive(Debug, Default, Deserialize)]
pub(super) struct SayForm {
    /// The message.
    pub text: Option<String>,
    /// Present: preempt the running turn.
    pub now: Option<String>,
}

/// What was said, and where it went.
fn answer(json: bool, title: &str, id: &str, message: &str, said: &str, back: &str) -> Response {
    if json {
        return Json(serde_json::json!({ "id": id, "message": message, "said": said }))
            .into_response();
    }
    let body = format!(
        "<h1>{}</h1><p>{}</p><p><a href=\"{}\">Back</a> · <a href=\"/\">the board</a></p>",
        esc(title),
        esc(said),
        esc(back)
    );
    Html(page(title, &body)).into_response()
}

/// `POST /sessions/{id}/say`.
pub(super) async fn session(
    app: App,
    id: String,
    signed: Signed,
    form: SayForm,
    json: bool,
) -> Response {
    let text = form.text.unwrap_or_default();
    let now = form.now.is_some();
    let actor = signed.grant.name.clone();
    let dir = app.state_dir.clone();
    let done = tokio::task::spawn_blocking(move || {
        let session = crate::store::Store::new(&*dir)
            .open(&id)
            .map_err(|e| (StatusCode::NOT_FOUND, format!("say to session {id}: {e}")))?;
        let driven = crate::store::holder_alive(&session.lock_path());
        let ms = crate::job::store::StoreClock::now_ms(&crate::job::store::SystemClock);
        crate::store::say(&session, &text, now, &actor, ms)
            .map(|said| (session.id().to_string(), said, driven))
            .map_err(|e| {
                let status = match &e {
                    crate::store::SayError::Empty { .. } => StatusCode::BAD_REQUEST,
                    crate::store::SayError::Ended { .. } => StatusCode::CONFLICT,
                    _ => StatusCode::SERVICE_UNAVAILABLE,
                };
                (status, e.to_string())
            })
    })
    .await;
    let (id, said, driven) = match done {
        Ok(Ok(s)) => s,
        Ok(Err((status, m))) => return refuse(status, json, &m),
        Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, json, &e.to_string()),
    };
    let words = if driven {
        format!(
            "Said to session {id}: its oneshot hands message {} to the running worker, or to \
             the next worker prompt; the session's log shows when it is taken in.",
            short(&said.id)
        )
    } else {
        format!(
            "Said to session {id}: nothing runs it now; its next worker prompt carries message \
             {} (oneshot resume {id}).",
            short(&said.id)
        )
    };
    answer(
        json,
        "Said",
        &id,
        &said.id,
        &words,
        &super::pages::session_path(&id),
    )
}

/// `POST /jobs/{id}/say`.
pub(super) async fn job(
    app: App,
    id: String,
    signed: Signed,
    form: SayForm,
    json: bool,
) -> Response {
    let text = form.text.unwrap_or_default();
    let now = form.now.is_some();
    let actor = signed.grant.name.clone();
    let store = app.store.clone();
    let done =
        tokio::task::spawn_blocking(move || crate::job::say(&*store, &id, &text, now, &actor))
            .await;
    let said = match done {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            use crate::job::JobSayError as E;
            let status = match &e {
                E::Empty { .. } => StatusCode::BAD_REQUEST,
                E::Ended { .. } => StatusCode::CONFLICT,
                E::Store {
                    source: JobStoreError::NotFound { .. } | JobStoreError::Ambiguous { .. },
                    ..
                } => StatusCode::NOT_FOUND,
                E::Store { .. } => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            };
            return refuse(status, json, &e.to_string());
        }
        Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, json, &e.to_string()),
    };
    let words = match &said.runner {
        Some(r) => format!(
            "Said to job {}: recorded in its audit trail; runner {r} holds it and hands message \
             {} to its worker.",
            said.job,
            short(&said.said.id)
        ),
        None => format!(
            "Said to job {}: recorded in its audit trail; no runner holds it now, so the first \
             worker prompt of its next session carries message {}.",
            said.job,
            short(&said.said.id)
        ),
    };
    answer(
        json,
        "Said",
        &said.job,
        &said.said.id,
        &words,
        &format!("/jobs/{}", said.job),
    )
}
