//! The routes: the pages (`super::views` → `super::pages`), the sign-in link, sign-out,
//! and the verbs — each a POST through the same library call as the CLI's verb
//! ([`verbs::give_seen`]), with the token's name as the actor in the audit trail.

use super::App;
use super::boundary::{COOKIE, Signed, boundary, refuse, wants_json};
use crate::job::landing::{self, Land, LandError};
use crate::job::store::{JobStoreError, StoreClock, SystemClock};
use crate::job::verbs::{self, GiveError, Giving, Seen, VerbError};
use crate::job::{JobState, JobTrigger};
use crate::token;
use axum::extract::rejection::FormRejection;
use axum::extract::{Extension, Form, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

/// Every route, behind the boundary (the fallback too).
pub(super) fn router(app: App) -> Router {
    Router::new()
        .route("/", get(super::views::board))
        .route("/inbox", get(super::views::inbox))
        .route("/spend", get(super::views::spend))
        .route("/jobs/{id}", get(super::views::job))
        .route("/jobs/{id}/events", get(super::live::job))
        .route("/events", get(super::live::board))
        .route("/jobs/{id}/{verb}", post(verb))
        .route("/sessions/{id}", get(super::sessions::page))
        .route("/sessions/{id}/stop", post(super::sessions::stop))
        .route("/sessions/{id}/say", post(session_say))
        .route("/login/{code}", get(login))
        .route("/logout", post(logout))
        .route("/assets/style.css", get(style))
        .route("/assets/live.js", get(script))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(app.clone(), boundary))
        .with_state(app)
}

async fn not_found(headers: HeaderMap) -> Response {
    refuse(
        StatusCode::NOT_FOUND,
        wants_json(&headers),
        "no such page; the board is at /",
    )
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        super::pages::LIVE_JS,
    )
        .into_response()
}

async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css")], super::pages::STYLE).into_response()
}

/// The session cookie, set (`Some`) or cleared (`None`).
fn session_cookie(app: &App, value: Option<&str>) -> HeaderValue {
    let secure = if app.secure { "; Secure" } else { "" };
    let text = match value {
        Some(v) => format!(
            "{COOKIE}={v}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{secure}",
            token::SESSION_TTL_MS / 1000
        ),
        None => format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}"),
    };
    // Made of the cookie's name, a secret of base64url characters and fixed words.
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// `GET /login/CODE`: redeems a one-time sign-in code and sets the session cookie.
async fn login(State(app): State<App>, Path(code): Path<String>, headers: HeaderMap) -> Response {
    let store = app.store.clone();
    let redeemed = tokio::task::spawn_blocking(move || token::redeem(&*store, &code)).await;
    let json = wants_json(&headers);
    match redeemed {
        Ok(Ok(Some((secret, _grant)))) => {
            let mut r = Redirect::to("/").into_response();
            *r.status_mut() = StatusCode::SEE_OTHER;
            r.headers_mut()
                .insert(header::SET_COOKIE, session_cookie(&app, Some(&secret)));
            r
        }
        Ok(Ok(None)) => refuse(
            StatusCode::FORBIDDEN,
            json,
            "this sign-in link was used already, has expired (links last 10 minutes), or its \
             token was revoked; run `oneshot token login NAME` for a new one",
        ),
        Ok(Err(e)) => refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            json,
            &format!("the job store failed: {e}"),
        ),
        Err(e) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            json,
            &format!("sign-in failed: {e}"),
        ),
    }
}

/// `POST /logout`: ends the browser session and clears its cookie.
async fn logout(
    State(app): State<App>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
) -> Response {
    if let Some(cookie) = signed.cookie {
        let store = app.store.clone();
        let ended = tokio::task::spawn_blocking(move || token::logout(&*store, &cookie)).await;
        if let Ok(Err(e)) = ended {
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                wants_json(&headers),
                &format!("the job store failed: {e}"),
            );
        }
    }
    let mut r = if wants_json(&headers) {
        Json(serde_json::json!({ "signed_out": signed.grant.name })).into_response()
    } else {
        let body = "<h1>Signed out</h1><p>Run <code>oneshot token login NAME</code> for a new \
                    sign-in link.</p>";
        axum::response::Html(super::views::page("Signed out", body)).into_response()
    };
    r.headers_mut()
        .insert(header::SET_COOKIE, session_cookie(&app, None));
    r
}

/// A verb's form: what the page showed (the approval is bound to it), and a reject's
/// critique.
#[derive(Debug, Default, Deserialize)]
pub(super) struct VerbForm {
    /// The job's steps when the page was made.
    attempt: Option<u32>,
    /// The latest artifact's diff hash when the page was made (empty: none).
    diff_hash: Option<String>,
    /// The job's state when the page was made.
    state: Option<String>,
    /// A reject's critique.
    feedback: Option<String>,
    /// A reject's comments on diff lines, one a line: `file:line: text`.
    comments: Option<String>,
    /// A message to the job's worker (`say`).
    text: Option<String>,
    /// Present: the message preempts the worker's running turn (`say`).
    now: Option<String>,
}

/// The verbs a page may POST, with the trigger each gives.
fn trigger(verb: &str) -> Option<JobTrigger> {
    Some(match verb {
        "approve" => JobTrigger::Approve,
        "reject" => JobTrigger::Reject,
        "resubmit" => JobTrigger::Resubmit,
        "suspend" => JobTrigger::Suspend,
        "resume" => JobTrigger::Resume,
        "cancel" => JobTrigger::Cancel,
        "land" => JobTrigger::Land,
        _ => return None,
    })
}

/// The comments of a reject, checked (`file:line: text` each), as the lines of the critique.
fn comments(text: &str) -> Result<Vec<String>, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let shaped = l.split_once(": ").and_then(|(at, said)| {
                let (file, line) = at.rsplit_once(':')?;
                let ok = !file.is_empty() && line.parse::<u32>().is_ok() && !said.trim().is_empty();
                ok.then(|| l.to_string())
            });
            shaped.ok_or_else(|| {
                format!(
                    "comment {l:?} is not `file:line: text` (e.g. `src/main.rs:12: this panics`)"
                )
            })
        })
        .collect()
}

/// What the form says was seen; `None` when it says nothing. Approve and reject must say it.
fn seen(form: &VerbForm, verb: JobTrigger) -> Result<Option<Seen>, String> {
    let bound = matches!(
        verb,
        JobTrigger::Approve | JobTrigger::Reject | JobTrigger::Land
    );
    let (Some(attempt), Some(diff_hash), Some(state)) =
        (form.attempt, form.diff_hash.as_ref(), form.state.as_ref())
    else {
        if bound || form.state.is_some() || form.attempt.is_some() || form.diff_hash.is_some() {
            return Err(
                "a verb is bound to what its page showed: send attempt, diff_hash and state \
                 together (the job page's form carries them; approve and reject need them)"
                    .to_string(),
            );
        }
        return Ok(None);
    };
    let state: JobState = state.parse().map_err(|e| format!("state {state:?}: {e}"))?;
    Ok(Some(Seen {
        state,
        attempt,
        diff_hash: diff_hash.trim().to_string(),
    }))
}

/// `POST /jobs/{id}/{verb}`: the verb, given as the token's name, bound to what was seen.
/// `POST /sessions/{id}/say` ([`super::say`]).
async fn session_say(
    State(app): State<App>,
    Path(id): Path<String>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
    form: Result<Form<super::say::SayForm>, FormRejection>,
) -> Response {
    let json = wants_json(&headers);
    match form {
        Ok(Form(f)) => super::say::session(app, id, signed, f, json).await,
        Err(e) => unreadable(json, &e),
    }
}

/// A form that does not read, answered.
fn unreadable(json: bool, e: &FormRejection) -> Response {
    refuse(
        StatusCode::BAD_REQUEST,
        json,
        &format!("the form does not read: {e}; send application/x-www-form-urlencoded"),
    )
}

async fn verb(
    State(app): State<App>,
    Path((id, verb)): Path<(String, String)>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
    form: Result<Form<VerbForm>, FormRejection>,
) -> Response {
    let json = wants_json(&headers);
    if verb == "say" {
        return match form {
            Ok(Form(f)) => {
                let said = super::say::SayForm {
                    text: f.text,
                    now: f.now,
                };
                super::say::job(app, id, signed, said, json).await
            }
            Err(e) => unreadable(json, &e),
        };
    }
    let Some(trigger) = trigger(&verb) else {
        return refuse(
            StatusCode::NOT_FOUND,
            json,
            &format!(
                "no verb {verb:?} here: approve, reject, resubmit, suspend, resume, cancel, land \
                 or say"
            ),
        );
    };
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                json,
                &format!("the form does not read: {e}; send application/x-www-form-urlencoded"),
            );
        }
    };
    let seen = match seen(&form, trigger) {
        Ok(s) => s,
        Err(m) => return refuse(StatusCode::BAD_REQUEST, json, &m),
    };
    let mut feedback = form
        .feedback
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_string);
    if let Some(text) = form
        .comments
        .as_deref()
        .filter(|_| trigger == JobTrigger::Reject)
    {
        let lines = match comments(text) {
            Ok(l) => l,
            Err(m) => return refuse(StatusCode::BAD_REQUEST, json, &m),
        };
        if !lines.is_empty() {
            let said = format!("Comments on the diff:\n{}", lines.join("\n"));
            feedback = Some(match feedback {
                Some(f) => format!("{f}\n\n{said}"),
                None => said,
            });
        }
    }
    let giving = Giving {
        actor: signed.grant.name.clone(),
        feedback,
        now_ms: SystemClock.now_ms(),
    };
    if trigger == JobTrigger::Land {
        return land(&app, &id, giving, seen, json).await;
    }
    let store = app.store.clone();
    let job_id = id.clone();
    let given = tokio::task::spawn_blocking(move || {
        verbs::give_seen(&*store, &job_id, trigger, &giving, seen.as_ref())
    })
    .await;
    let given = match given {
        Ok(g) => g,
        Err(e) => {
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                json,
                &format!("{verb} failed: {e}"),
            );
        }
    };
    if let Ok(g) = &given {
        told(&app, &g.job.id);
    }
    match given {
        Ok(g) if json => Json(serde_json::json!({
            "id": g.job.id,
            "from": g.from.as_str(),
            "to": g.job.state().as_str(),
            "actor": signed.grant.name,
        }))
        .into_response(),
        Ok(g) => {
            let mut r = Redirect::to(&format!("/jobs/{}", g.job.id)).into_response();
            *r.status_mut() = StatusCode::SEE_OTHER;
            r
        }
        Err(e) => refuse(status_of(&e), json, &format!("{verb} {id}: {e}")),
    }
}

/// `POST /jobs/{id}/land`: the job's work landed in its source as `job land` lands it on this
/// machine (`landing::land_in`, no resolver: a conflict leaves the base untouched and the job
/// INTERVENTION_REQUIRED), bound to what the page showed (its state, step and diff), as every
/// verb from a page is.
async fn land(app: &App, id: &str, giving: Giving, seen: Option<Seen>, json: bool) -> Response {
    let (store, state_dir, job_id) = (app.store.clone(), app.state_dir.clone(), id.to_string());
    let done = tokio::task::spawn_blocking(move || {
        landing::land_in(&*store, &job_id, &giving, None, &state_dir, seen.as_ref()).map_err(|e| {
            let status = match &e {
                LandError::Give(g) => status_of(g),
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            (status, e.to_string())
        })
    })
    .await;
    let landed = match done {
        Ok(Ok(l)) => l,
        Ok(Err((status, message))) => {
            return refuse(status, json, &format!("land {id}: {message}"));
        }
        Err(e) => {
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                json,
                &format!("land {id} failed: {e}"),
            );
        }
    };
    let job = landed.job().clone();
    told(app, &job.id);
    if json {
        let (result, reason) = match &landed {
            Land::Landed(_) => ("landed", None),
            Land::Failed(_, f) => ("failed", Some(f.to_string())),
        };
        return Json(serde_json::json!({
            "id": job.id,
            "result": result,
            "to": job.state().as_str(),
            "reason": reason,
        }))
        .into_response();
    }
    let mut r = Redirect::to(&format!("/jobs/{}", job.id)).into_response();
    *r.status_mut() = StatusCode::SEE_OTHER;
    r
}

/// After a verb moved job `id`: a move into a state that needs a human is told by `[notify]`
/// (claimed once in the store), in the background — the page does not wait for a webhook.
fn told(app: &App, id: &str) {
    if let Some(n) = &app.notifier {
        let (n, id) = (n.clone(), id.to_string());
        tokio::spawn(async move { n.after_verb(&id).await });
    }
}

/// The HTTP status of a verb that wrote nothing.
fn status_of(e: &GiveError) -> StatusCode {
    match e {
        GiveError::Verb(VerbError::Stale { .. } | VerbError::Refused { .. }) => {
            StatusCode::CONFLICT
        }
        GiveError::Verb(_) => StatusCode::BAD_REQUEST,
        GiveError::Store(JobStoreError::NotFound { .. } | JobStoreError::Ambiguous { .. }) => {
            StatusCode::NOT_FOUND
        }
        GiveError::Store(
            JobStoreError::Conflict { .. }
            | JobStoreError::Stepped { .. }
            | JobStoreError::Busy { .. },
        ) => StatusCode::CONFLICT,
        GiveError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_file_line_text_each() {
        assert_eq!(
            comments("src/a.rs:12: this panics\n\n  b.txt:3: typo ").unwrap(),
            ["src/a.rs:12: this panics", "b.txt:3: typo"]
        );
        assert!(comments("no line number: here").is_err());
        assert!(comments("a.rs:x: nope").is_err());
        assert!(comments("a.rs:3: ").is_err());
    }

    #[test]
    fn approve_and_reject_must_say_what_was_seen() {
        let none = VerbForm::default();
        assert!(seen(&none, JobTrigger::Approve).is_err());
        assert!(seen(&none, JobTrigger::Reject).is_err());
        assert_eq!(seen(&none, JobTrigger::Cancel), Ok(None));
        let all = VerbForm {
            attempt: Some(2),
            diff_hash: Some("abc".into()),
            state: Some("APPROVAL_REQUIRED".into()),
            ..VerbForm::default()
        };
        let s = seen(&all, JobTrigger::Approve).unwrap().unwrap();
        assert_eq!(
            (s.state, s.attempt, s.diff_hash.as_str()),
            (JobState::ApprovalRequired, 2, "abc")
        );
        let part = VerbForm {
            attempt: Some(2),
            ..VerbForm::default()
        };
        assert!(seen(&part, JobTrigger::Cancel).is_err());
    }
}
