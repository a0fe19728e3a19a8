//! The page routes: each reads the store on the blocking pool and renders one of
//! [`super::pages`] for the signed-in viewer; and the plain document the server's own
//! messages (a refusal, signed out) are written in.

use super::App;
use super::boundary::{Signed, refuse, wants_json};
use super::pages::{self, BoardQuery, Viewer};
use crate::job::store::{JobStore, JobStoreError};
use crate::token::Scope;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};

/// `text` safe inside HTML text and attribute values.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A whole document around `body`.
pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} — \
         oneshot</title><link rel=\"stylesheet\" href=\"/assets/style.css\"></head><body>{body}\
         </body></html>",
        esc(title)
    )
}

/// Who is looking, as the pages need it: what the token's scopes let them do.
pub(super) fn viewer(signed: &Signed) -> Viewer {
    Viewer {
        name: signed.grant.name.clone(),
        can_operate: signed.grant.allows(Scope::Operate),
        can_approve: signed.grant.allows(Scope::Approve),
    }
}

/// A store read that failed, answered: 404 for an id that names no job (or several), 503 for
/// a store that failed.
pub(crate) fn store_failed(e: &JobStoreError, headers: &HeaderMap) -> Response {
    match e {
        JobStoreError::NotFound { .. } | JobStoreError::Ambiguous { .. } => {
            refuse(StatusCode::NOT_FOUND, wants_json(headers), &e.to_string())
        }
        _ => refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            wants_json(headers),
            &format!("the job store failed: {e}"),
        ),
    }
}

/// Runs a store read on the blocking pool and renders it, or says why not.
async fn render(
    app: &App,
    headers: &HeaderMap,
    read: impl FnOnce(&dyn JobStore) -> Result<String, JobStoreError> + Send + 'static,
) -> Response {
    let store = app.store.clone();
    match tokio::task::spawn_blocking(move || read(&*store)).await {
        Ok(Ok(html)) => Html(html).into_response(),
        Ok(Err(e)) => store_failed(&e, headers),
        Err(e) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            wants_json(headers),
            &e.to_string(),
        ),
    }
}

/// `GET /`: the board ([`pages::board_with_sessions`]), filtered by the query's fields.
pub(super) async fn board(
    State(app): State<App>,
    Extension(signed): Extension<Signed>,
    Query(query): Query<BoardQuery>,
    headers: HeaderMap,
) -> Response {
    let viewer = viewer(&signed);
    let state_dir = app.state_dir.clone();
    render(&app, &headers, move |store| {
        pages::board_with_sessions(store, &query, &viewer, &state_dir)
    })
    .await
}

/// `GET /spend`: the agents' spending per day and per job ([`pages::spend`]).
pub(super) async fn spend(
    State(app): State<App>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
) -> Response {
    let viewer = viewer(&signed);
    render(&app, &headers, move |store| pages::spend(store, &viewer)).await
}

/// `GET /inbox`: what waits for a human, oldest first ([`pages::inbox`]).
pub(super) async fn inbox(
    State(app): State<App>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
) -> Response {
    let viewer = viewer(&signed);
    render(&app, &headers, move |store| pages::inbox(store, &viewer)).await
}

/// `GET /jobs/{id}`: the job's page ([`pages::job`]), its forms carrying what the page shows,
/// which binds each verb to it.
pub(super) async fn job(
    State(app): State<App>,
    Path(id): Path<String>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
) -> Response {
    let viewer = viewer(&signed);
    let state_dir = app.state_dir.clone();
    render(&app, &headers, move |store| {
        pages::job(store, &id, &viewer, &state_dir)
    })
    .await
}
