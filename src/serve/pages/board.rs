//! The board: every job, grouped by its state as the store holds it, with counts per state,
//! who is working on each (or an explicit *stale* / *unknown*), filters by state, risk and
//! runner, a search of the task text, and the runners panel.

use super::html::{Esc, document, job_link, segment, state_badge, w};
use super::liveness::{Fleet, Liveness};
use super::time::ago;
use super::{BOARD_PATH, BoardQuery, Viewer};
use crate::job::JobState;
use crate::job::record::Risk;
use crate::job::store::{JobStore, JobStoreError, JobSummary, ListFilter};

/// A query as the board applies it: blank fields are no filter; a field that names nothing
/// (an unknown state or risk) is dropped with a notice instead of showing a board that lies.
#[derive(Debug, Default)]
struct Filters {
    state: Option<JobState>,
    risk: Option<Risk>,
    runner: Option<String>,
    q: Option<String>,
    notices: Vec<String>,
}

/// `Some(trimmed)` unless blank.
fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl Filters {
    fn of(query: &BoardQuery) -> Filters {
        let mut f = Filters::default();
        if let Some(s) = given(&query.state) {
            match s.replace('-', "_").parse::<JobState>() {
                Ok(state) => f.state = Some(state),
                Err(e) => f.notices.push(format!("state filter ignored: {e}")),
            }
        }
        if let Some(r) = given(&query.risk) {
            match r.parse::<Risk>() {
                Ok(risk) => f.risk = Some(risk),
                Err(e) => f.notices.push(format!("risk filter ignored: {e}")),
            }
        }
        f.runner = given(&query.runner).map(str::to_string);
        f.q = given(&query.q).map(str::to_lowercase);
        f
    }

    /// Whether the job's text matches the search: its id, nickname or title, else (read
    /// only then) its whole task.
    fn matches_text(&self, store: &dyn JobStore, j: &JobSummary) -> Result<bool, JobStoreError> {
        let Some(q) = &self.q else { return Ok(true) };
        let hit = |s: &str| s.to_lowercase().contains(q.as_str());
        if hit(&j.id) || hit(&j.title) || j.nickname.as_deref().is_some_and(hit) {
            return Ok(true);
        }
        Ok(hit(&store.get(&j.id)?.spec.task))
    }
}

/// One job as the board shows it.
struct Row {
    job: JobSummary,
    live: Liveness,
}

/// The board page.
pub(crate) fn render(
    store: &dyn JobStore,
    query: &BoardQuery,
    viewer: &Viewer,
    sessions: Option<&std::path::Path>,
) -> Result<String, JobStoreError> {
    let filters = Filters::of(query);
    let fleet = Fleet::read(store);
    let now = fleet.now_or_local();
    let jobs = store.list(&ListFilter {
        state: filters.state,
    })?;
    let mut rows = Vec::new();
    for job in jobs {
        if filters.risk.is_some_and(|r| r != job.risk) || !filters.matches_text(store, &job)? {
            continue;
        }
        let live = fleet.of(store, &job.id, job.state);
        if let Some(want) = &filters.runner
            && !live.runner().is_some_and(|r| r.contains(want.as_str()))
        {
            continue;
        }
        rows.push(Row { job, live });
    }

    let mut body = String::from("<h1>Jobs</h1>\n");
    body.push_str(&super::html::live_feed(super::BOARD_EVENTS_PATH, None));
    for n in &filters.notices {
        w!(body, "<p class=\"notice\">{}</p>\n", Esc(n));
    }
    body.push_str(&form(query, &fleet));
    body.push_str(&counts(&rows, query));
    if rows.is_empty() {
        body.push_str(
            "<p class=\"empty\">No jobs match. <code>oneshot job create --help</code> shows how \
             to make one.</p>\n",
        );
    }
    for state in JobState::ALL {
        let group: Vec<&Row> = rows.iter().filter(|r| r.job.state == state).collect();
        if group.is_empty() {
            continue;
        }
        w!(
            body,
            "<section class=\"group\" id=\"state-{}\">\n<h2>{} <span class=\"count\">{}</span></h2>\n\
             <table class=\"jobs\">\n<thead><tr><th>Job</th><th>Task</th><th>Risk</th>\
             <th>Steps</th><th>Updated</th><th>Runner</th></tr></thead>\n<tbody>\n",
            state.as_str().to_ascii_lowercase(),
            state_badge(state),
            group.len()
        );
        for r in group {
            body.push_str(&row(r, now));
        }
        body.push_str("</tbody>\n</table>\n");
        if state == JobState::Pending
            && let Some(w) = fleet.pending_wait()
        {
            w!(
                body,
                "<p class=\"notice waiting\">⏳ Every live runner is {} — these jobs start \
                 when memory frees.</p>\n",
                Esc(&w.to_string())
            );
        }
        body.push_str("</section>\n");
    }
    if let Some(dir) = sessions {
        body.push_str(&super::sessions::board_section(dir));
    }
    body.push_str(&super::runners::panel(&fleet));
    Ok(document("Jobs", viewer, &body))
}

fn row(r: &Row, now: u64) -> String {
    let j = &r.job;
    let nick = j
        .nickname
        .as_deref()
        .map(|n| format!("<strong class=\"nick\">{}</strong> ", Esc(n)))
        .unwrap_or_default();
    format!(
        "<tr class=\"job\" data-job=\"{}\"><td>{}</td><td>{nick}{}</td><td class=\"risk risk-{}\">{}</td>\
         <td class=\"num\">{}</td><td>{}</td><td class=\"lease\">{}</td></tr>\n",
        Esc(&j.id),
        job_link(&j.id),
        Esc(&j.title),
        j.risk.as_str(),
        j.risk.as_str(),
        j.steps,
        ago(j.updated_ms, now),
        r.live.cell()
    )
}

/// The filter form: a GET of the board itself.
fn form(query: &BoardQuery, fleet: &Fleet) -> String {
    let value = |v: &Option<String>| Esc(v.as_deref().unwrap_or("")).to_string();
    let chosen = |v: &Option<String>, name: &str| {
        given(v).is_some_and(|s| s.replace('-', "_").eq_ignore_ascii_case(name))
    };
    let mut out = String::new();
    w!(
        out,
        "<form class=\"filters\" method=\"get\" action=\"{BOARD_PATH}\">\n\
         <label>State <select name=\"state\"><option value=\"\">any</option>"
    );
    for s in JobState::ALL {
        let sel = if chosen(&query.state, s.as_str()) {
            " selected"
        } else {
            ""
        };
        w!(out, "<option value=\"{0}\"{sel}>{0}</option>", s.as_str());
    }
    out.push_str(
        "</select></label>\n<label>Risk <select name=\"risk\"><option value=\"\">any</option>",
    );
    for r in [Risk::Low, Risk::Medium, Risk::High] {
        let sel = if chosen(&query.risk, r.as_str()) {
            " selected"
        } else {
            ""
        };
        w!(out, "<option value=\"{0}\"{sel}>{0}</option>", r.as_str());
    }
    w!(
        out,
        "</select></label>\n<label>Runner <input name=\"runner\" list=\"runner-ids\" value=\"{}\"></label>\n\
         <datalist id=\"runner-ids\">",
        value(&query.runner)
    );
    if let Ok(rows) = &fleet.runners {
        for r in rows {
            w!(out, "<option value=\"{}\">", Esc(&r.runner));
        }
    }
    w!(
        out,
        "</datalist>\n<label>Search <input type=\"search\" name=\"q\" value=\"{}\" \
         placeholder=\"task text\"></label>\n<button type=\"submit\">Filter</button> \
         <a href=\"{BOARD_PATH}\">clear</a>\n</form>\n",
        value(&query.q)
    );
    out
}

/// The count of shown jobs per state, each a link to that state alone (the other filters
/// kept).
fn counts(rows: &[Row], query: &BoardQuery) -> String {
    let mut keep = String::new();
    for (k, v) in [
        ("risk", &query.risk),
        ("runner", &query.runner),
        ("q", &query.q),
    ] {
        if let Some(v) = given(v) {
            w!(keep, "&amp;{k}={}", segment(v));
        }
    }
    let mut out = format!(
        "<p class=\"counts\"><span class=\"total\">{} job{}</span>",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    );
    for state in JobState::ALL {
        let n = rows.iter().filter(|r| r.job.state == state).count();
        if n > 0 {
            w!(
                out,
                " <a class=\"count-{}\" href=\"{BOARD_PATH}?state={}{keep}\">{} {n}</a>",
                state.as_str().to_ascii_lowercase(),
                state.as_str(),
                state.as_str()
            );
        }
    }
    out.push_str("</p>\n");
    out
}
