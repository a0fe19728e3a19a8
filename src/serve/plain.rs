//! Plain pages of the board, a job and the inbox: server-rendered HTML without script, enough
//! to see the jobs and act on one. They stand in until the dashboard's pages
//! (`super::pages`) land; the boundary, the routes and the verbs stay as they are.

use super::App;
use super::boundary::{Signed, refuse, wants_json};
use crate::job::store::{JobStore, JobStoreError, ListFilter};
use crate::job::{JobState, JobTrigger, allowed};
use crate::token::Scope;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};

/// The stylesheet, served at `/assets/style.css`.
pub(crate) const STYLE: &str = "body{font:15px/1.4 system-ui,sans-serif;margin:2em;max-width:70em}
table{border-collapse:collapse}td,th{padding:.2em .8em;text-align:left;border-bottom:1px solid #ddd}
form{display:inline-block;margin:.3em .5em .3em 0}textarea{width:40em;display:block}
pre{background:#f5f5f5;padding:.5em;white-space:pre-wrap}nav a{margin-right:1em}";

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

/// Who is looking, as a page needs it.
struct Viewer {
    name: String,
    can_operate: bool,
    can_approve: bool,
}

impl Viewer {
    fn of(signed: &Signed) -> Viewer {
        Viewer {
            name: signed.grant.name.clone(),
            can_operate: signed.grant.allows(Scope::Operate),
            can_approve: signed.grant.allows(Scope::Approve),
        }
    }

    fn nav(&self) -> String {
        format!(
            "<nav><a href=\"/\">board</a><a href=\"/inbox\">inbox</a> signed in as <b>{}</b> \
             <form method=\"post\" action=\"/logout\"><button>sign out</button></form></nav>",
            esc(&self.name)
        )
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
        Ok(Err(e @ (JobStoreError::NotFound { .. } | JobStoreError::Ambiguous { .. }))) => {
            refuse(StatusCode::NOT_FOUND, wants_json(headers), &e.to_string())
        }
        Ok(Err(e)) => refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            wants_json(headers),
            &format!("the job store failed: {e}"),
        ),
        Err(e) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            wants_json(headers),
            &e.to_string(),
        ),
    }
}

/// `GET /`: every job, oldest first, each linking to its page.
pub(super) async fn board(
    State(app): State<App>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
) -> Response {
    let viewer = Viewer::of(&signed);
    render(&app, &headers, move |store| {
        let jobs = store.list(&ListFilter::default())?;
        let rows: String = jobs
            .iter()
            .map(|j| {
                format!(
                    "<tr><td><a href=\"/jobs/{id}\">{id}</a></td><td class=\"state\">{}</td>\
                     <td>{}</td><td>{}</td><td>{}</td></tr>",
                    j.state.as_str(),
                    j.steps,
                    j.risk.as_str(),
                    esc(&j.title),
                    id = esc(&j.id),
                )
            })
            .collect();
        Ok(page(
            "Jobs",
            &format!(
                "{}<h1>Jobs</h1><table><tr><th>job</th><th>state</th><th>steps</th>\
                 <th>risk</th><th>task</th></tr>{rows}</table>",
                viewer.nav()
            ),
        ))
    })
    .await
}

/// `GET /inbox`: what waits for a human, oldest first.
pub(super) async fn inbox(
    State(app): State<App>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
) -> Response {
    let viewer = Viewer::of(&signed);
    render(&app, &headers, move |store| {
        let now = store.now_ms()?;
        let mut rows = String::new();
        for state in [JobState::ApprovalRequired, JobState::InterventionRequired] {
            for j in store.list(&ListFilter { state: Some(state) })? {
                rows.push_str(&format!(
                    "<tr><td><a href=\"/jobs/{id}\">{id}</a></td><td class=\"state\">{}</td>\
                     <td>{} min</td><td>{}</td></tr>",
                    state.as_str(),
                    now.saturating_sub(j.updated_ms) / 60_000,
                    esc(&j.title),
                    id = esc(&j.id),
                ));
            }
        }
        Ok(page(
            "Inbox",
            &format!(
                "{}<h1>Waiting for a human</h1><table><tr><th>job</th><th>state</th>\
                 <th>waiting</th><th>task</th></tr>{rows}</table>",
                viewer.nav()
            ),
        ))
    })
    .await
}

/// `GET /jobs/{id}`: the job's state, latest artifact and trail, and the verbs the viewer may
/// give in that state — each form carrying what the page shows, which binds the verb to it.
pub(super) async fn job(
    State(app): State<App>,
    Path(id): Path<String>,
    Extension(signed): Extension<Signed>,
    headers: HeaderMap,
) -> Response {
    let viewer = Viewer::of(&signed);
    render(&app, &headers, move |store| {
        let job = store.get(&id)?;
        let latest = store.artifacts(&job.id)?.pop();
        let audit = store.audit(Some(&job.id))?;
        let diff_hash = latest.as_ref().map_or("", |a| a.diff_hash.as_str());
        let state = job.state();
        let hidden = format!(
            "<input type=\"hidden\" name=\"attempt\" value=\"{}\"><input type=\"hidden\" \
             name=\"diff_hash\" value=\"{}\"><input type=\"hidden\" name=\"state\" value=\"{}\">",
            job.steps,
            esc(diff_hash),
            state.as_str()
        );
        let mut forms = String::new();
        for t in allowed(state) {
            let (word, may) = match t {
                JobTrigger::Approve => ("approve", viewer.can_approve),
                JobTrigger::Reject => ("reject", viewer.can_approve),
                JobTrigger::Resubmit => ("resubmit", viewer.can_operate),
                JobTrigger::Suspend => ("suspend", viewer.can_operate),
                JobTrigger::Resume => ("resume", viewer.can_operate),
                JobTrigger::Cancel => ("cancel", viewer.can_operate),
                _ => continue,
            };
            if !may {
                continue;
            }
            let extra = if t == JobTrigger::Reject {
                "<textarea name=\"feedback\" placeholder=\"what the next attempt is told\" \
                 required></textarea><textarea name=\"comments\" placeholder=\"comments on \
                 lines, one a line: file:line: text\"></textarea>"
            } else {
                ""
            };
            forms.push_str(&format!(
                "<form method=\"post\" action=\"/jobs/{}/{word}\">{hidden}{extra}\
                 <button name=\"do\" value=\"{word}\">{word}</button></form>",
                esc(&job.id)
            ));
        }
        let artifact = match &latest {
            Some(a) => format!(
                "<h2>Latest result (version {}, step {})</h2><p>diff <code>{}</code></p>\
                 <pre>{}</pre><pre>{}</pre>",
                a.version,
                a.step,
                esc(&a.diff_hash),
                esc(&a.diff_stat),
                esc(&a.final_message)
            ),
            None => "<p>No result yet.</p>".to_string(),
        };
        let trail: String = audit
            .iter()
            .map(|e| {
                format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                    e.action.as_str(),
                    esc(&e.actor),
                    e.at_ms
                )
            })
            .collect();
        Ok(page(
            &job.id,
            &format!(
                "{}<h1>{}</h1><p>state <b class=\"state\">{}</b>, step {}, risk {}</p>\
                 <p>{}</p><pre>{}</pre><div class=\"verbs\">{forms}</div>{artifact}\
                 <h2>Audit trail</h2><table><tr><th>action</th><th>actor</th><th>at (ms)</th>\
                 </tr>{trail}</table>",
                viewer.nav(),
                esc(&job.id),
                state.as_str(),
                job.steps,
                job.spec.risk.as_str(),
                esc(&job.reason_words().unwrap_or_default()),
                esc(&job.spec.task),
            ),
        ))
    })
    .await
}
