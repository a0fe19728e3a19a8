//! The sessions of the state directory `oneshot serve` runs with — what `oneshot list` and
//! `oneshot status` show, read through the same library calls ([`Store::list`],
//! [`SessionDir::read_state`], [`Liveness::of`], [`read_log`]): a section of the board, and a
//! page per session with its activity log and, for a session a live oneshot drives, a stop.
//!
//! Whether a session is driven is judged as `oneshot list` judges it: by its lock file, which
//! names the oneshot holding it by pid and start time on this machine. A session whose state
//! says a step is under way while that holder is gone is *stale*; one whose state file does
//! not read is *unknown* — never shown in a state its files do not hold.

use super::Viewer;
use super::account::Account;
use super::html::{Esc, document, segment, w};
use super::policy::{Reloads, cells};
use super::time::{ago, at, local_now_ms};
use crate::session::Session;
use crate::store::{Liveness, SessionDir, Store, StoreError, Summary, read_log};

/// The most sessions the board lists (the newest).
const BOARD_MAX: usize = 50;

/// The most log records one session page renders.
const MAX_RECORDS: usize = 20_000;

/// The path of session `id`'s page.
pub(crate) fn session_path(id: &str) -> String {
    format!("/sessions/{}", segment(id))
}

/// The first 8 characters of an id, as `oneshot list` shows it.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// A session's state as a badge.
fn state_badge(state: crate::machine::SessionState) -> String {
    format!(
        "<span class=\"badge session state-{}\">{}</span>",
        state.as_str().to_ascii_lowercase(),
        state.as_str()
    )
}

/// Whether a live oneshot drives it, as a cell.
fn liveness_cell(live: Liveness, state: crate::machine::SessionState) -> String {
    match live {
        Liveness::Running { pid } => {
            format!("<span class=\"badge live\">live</span> <small>oneshot pid {pid}</small>")
        }
        Liveness::Stale => format!(
            "<span class=\"badge stale\">stale</span> <small>the oneshot that drove it is gone \
             and left it in {state}; <code>oneshot resume</code> continues it</small>"
        ),
        Liveness::Paused => "<span class=\"badge paused\">paused</span> <small>nobody drives it; \
             <code>oneshot resume</code> continues it</small>"
            .to_string(),
        Liveness::Ended => "<span class=\"none\">—</span>".to_string(),
    }
}

/// The board's section: the state directory's sessions, newest first.
pub(crate) fn board_section(state_dir: &std::path::Path) -> String {
    let store = Store::new(state_dir);
    let mut out = String::from(
        "<section class=\"sessions\" id=\"sessions\">\n<h2>Sessions <small>of this \
         machine's state directory</small></h2>\n",
    );
    let listed = match store.list() {
        Ok(l) => l,
        Err(e) => {
            w!(
                out,
                "<p class=\"notice\"><span class=\"badge unknown\">unknown</span> the sessions \
                 under <code>{}</code> could not be listed: {}</p>\n</section>\n",
                Esc(&store.root().display().to_string()),
                Esc(&e.to_string())
            );
            return out;
        }
    };
    if listed.is_empty() {
        w!(
            out,
            "<p class=\"empty\">No sessions under <code>{}</code>.</p>\n</section>\n",
            Esc(&store.root().display().to_string())
        );
        return out;
    }
    let now = local_now_ms();
    out.push_str(
        "<table class=\"sessions\">\n<thead><tr><th>Session</th><th>State</th><th>Task</th>\
         <th>Iteration</th><th>Updated</th><th>Driven by</th></tr></thead>\n<tbody>\n",
    );
    for (dir, summary) in listed.iter().take(BOARD_MAX) {
        out.push_str(&board_row(dir, summary.as_ref(), now));
    }
    out.push_str("</tbody>\n</table>\n");
    if listed.len() > BOARD_MAX {
        w!(
            out,
            "<p class=\"notice\">The newest {BOARD_MAX} of {} sessions; <code>oneshot list</code> \
             lists them all.</p>\n",
            listed.len()
        );
    }
    out.push_str("</section>\n");
    out
}

fn board_row(dir: &SessionDir, summary: Result<&Summary, &StoreError>, now: u64) -> String {
    let link = format!(
        "<a class=\"id\" href=\"{}\">{}</a>",
        Esc(&session_path(dir.id())),
        Esc(short(dir.id()))
    );
    match summary {
        Ok(s) => {
            let live = Liveness::of(s.state, &dir.lock_path());
            let title = s.task.lines().next().unwrap_or("");
            format!(
                "<tr class=\"session\" data-session=\"{}\"><td>{link}</td><td>{}</td><td>{}</td>\
                 <td class=\"num\">{}/{}</td><td>{}</td><td class=\"lease\">{}</td></tr>\n",
                Esc(dir.id()),
                state_badge(s.state),
                Esc(title),
                s.iteration,
                s.max_iterations,
                ago(s.updated_ms, now),
                liveness_cell(live, s.state)
            )
        }
        Err(e) => format!(
            "<tr class=\"session\" data-session=\"{}\"><td>{link}</td><td><span class=\"badge \
             unknown\">unknown</span></td><td colspan=\"4\"><small>its state file does not \
             read: {}</small></td></tr>\n",
            Esc(dir.id()),
            Esc(&e.to_string())
        ),
    }
}

/// Session `id`'s page (an id or unique prefix): its state, who drives it, its policy, a stop
/// when a live oneshot drives it and the viewer may operate, and its activity log.
pub(crate) fn render(
    state_dir: &std::path::Path,
    id: &str,
    viewer: &Viewer,
) -> Result<String, StoreError> {
    let store = Store::new(state_dir);
    let dir = store.open(id)?;
    let id = dir.id().to_string();
    let mut body = String::new();
    let session = dir.read_state();
    let (header, live) = match &session {
        Ok(s) => {
            let live = Liveness::of(s.state(), &dir.lock_path());
            (state_badge(s.state()), Some((live, s.state())))
        }
        Err(_) => (
            "<span class=\"badge unknown\">unknown</span>".to_string(),
            None,
        ),
    };
    w!(
        body,
        "<h1>Session <code>{}</code> {header}</h1>\n",
        Esc(&id)
    );
    let mut account = Account::of(&id);
    let log = read_log(dir.log_path());
    match &session {
        Ok(s) => {
            let (live, state) = live.expect("read with the session");
            w!(
                body,
                "<section class=\"lease\">\n<h2>Driven by</h2>\n<p>{}</p>\n",
                liveness_cell(live, state)
            );
            if matches!(live, Liveness::Running { .. }) && viewer.can_operate {
                w!(
                    body,
                    "<form class=\"verb verb-stop\" method=\"post\" action=\"{}/stop\">\
                     <button type=\"submit\">Stop</button> <small>asks its oneshot to pause, \
                     as <code>oneshot stop</code> does; <code>oneshot resume</code> continues \
                     it</small></form>\n",
                    Esc(&session_path(&id))
                );
            }
            body.push_str("</section>\n");
            if viewer.can_operate && !s.state().is_terminal() {
                body.push_str(&super::forms::say(
                    &session_path(&id),
                    "the session's worker",
                ));
            }
            if let Ok(l) = &log {
                // Numbered as the log holds them (a session's page has no live stream).
                for (n, r) in l.records.iter().take(MAX_RECORDS).enumerate() {
                    account.record(n as u64 + 1, r);
                }
            }
            body.push_str(&details(s, &account.reloads()));
        }
        Err(e) => w!(
            body,
            "<p class=\"notice\">Its state file does not read: {}</p>\n",
            Esc(&e.to_string())
        ),
    }
    body.push_str("<section class=\"log\">\n<h2>Log</h2>\n");
    match log {
        Ok(l) => {
            for warning in &l.warnings {
                w!(body, "<p class=\"notice\">{}</p>\n", Esc(warning));
            }
            if session.is_err() {
                // Numbered as the log holds them (a session's page has no live stream).
                for (n, r) in l.records.iter().take(MAX_RECORDS).enumerate() {
                    account.record(n as u64 + 1, r);
                }
            }
            if l.records.len() > MAX_RECORDS {
                w!(
                    body,
                    "<p class=\"notice\">Only the first {MAX_RECORDS} log records are shown; \
                     <code>oneshot log {}</code> prints them all.</p>\n",
                    Esc(&id)
                );
            }
            body.push_str(&account.finish());
        }
        Err(e) => w!(
            body,
            "<p class=\"notice\">Its log does not read: {}</p>\n",
            Esc(&e.to_string())
        ),
    }
    body.push_str("</section>\n");
    Ok(document(&format!("session {}", short(&id)), viewer, &body))
}

/// What the session is, as a definition list, with its policy.
fn details(s: &Session, reloads: &Reloads) -> String {
    let now = local_now_ms();
    let mut out = String::from("<section class=\"spec\">\n<h2>Session</h2>\n<dl>\n");
    let mut item = |k: &str, v: String| w!(out, "<dt>{k}</dt><dd>{v}</dd>\n");
    item(
        "Task",
        format!("<pre class=\"task\">{}</pre>", Esc(&s.task)),
    );
    item("Iteration", format!("{}/{}", s.iteration, s.max_iterations));
    item(
        "Workdir",
        format!("<code>{}</code>", Esc(&s.workdir.display().to_string())),
    );
    item("Worker", format!("<code>{}</code>", Esc(&s.worker_cmd)));
    item("Auditor", format!("<code>{}</code>", Esc(&s.auditor_cmd)));
    item(
        "Created",
        format!(
            "{} <small>({})</small>",
            at(s.created_ms),
            ago(s.created_ms, now)
        ),
    );
    item(
        "Updated",
        format!(
            "{} <small>({})</small>",
            at(s.updated_ms),
            ago(s.updated_ms, now)
        ),
    );
    out.push_str("</dl>\n</section>\n");
    w!(
        out,
        "<section class=\"policy\" id=\"policy\">\n<h2>Policy</h2>\n<table class=\"policies\">\n\
         <thead><tr><th>File</th><th>Hash</th><th>Generation</th><th>Last reload error</th>\
         </tr></thead>\n<tbody><tr class=\"session-policy\">{}</tr></tbody>\n</table>\n</section>\n",
        cells(Some(&Ok(s.policy.clone())), None, reloads)
    );
    out
}
