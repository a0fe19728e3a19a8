//! A job's page: what it is to do (its spec), where it stands and why, who holds it, what the
//! viewer may do about it, its diff against the base, its attempts, its history, the policy
//! each session ran under, the policy's decisions and the audit trail — read from the store in
//! one go (the diff from the workspace, when it is on this machine).

use super::Viewer;
use super::html::{Esc, document, state_badge, w};
use super::liveness::{Fleet, Liveness};
use super::time::{ago, at};
use crate::job::Job;
use crate::job::store::{JobStore, JobStoreError};

/// The job page of `id` (an id or a unique prefix, as every store read takes it).
pub(crate) fn render(
    store: &dyn JobStore,
    id: &str,
    viewer: &Viewer,
    state_dir: &std::path::Path,
) -> Result<String, JobStoreError> {
    let job = store.get(id)?;
    let history = store.history(&job.id)?;
    let audit = store.audit(Some(&job.id))?;
    let decisions = store.decisions(&job.id)?;
    let fleet = Fleet::read(store);
    let live = fleet.of(store, &job.id, job.state());
    let timeline = super::timeline::render(store, &job)?;
    let diff_hash = timeline.latest.as_ref().map(|a| a.diff_hash.clone());
    let cursor = crate::serve::live::Cursor {
        transitions: history.len() as u64,
        entries: timeline.last_entry,
    };

    let mut body = String::new();
    w!(
        body,
        "<h1><code>{}</code> {}</h1>\n",
        Esc(&job.id),
        state_badge(job.state())
    );
    body.push_str(&super::html::live_feed(
        &format!("{}/events", super::html::job_path(&job.id)),
        Some(&cursor.to_string()),
    ));
    if let Some(r) = &job.reason {
        w!(body, "<p class=\"reason\">{}</p>\n", Esc(&r.to_string()));
    }
    body.push_str(&lease(store, &job, &live, &fleet));
    body.push_str(&super::forms::actions(&job, diff_hash.as_deref(), viewer));
    if viewer.can_operate && !job.state().is_terminal() {
        body.push_str(&super::forms::say(
            &super::html::job_path(&job.id),
            "the job's worker",
        ));
    }
    body.push_str(&spec(&job, fleet.now_or_local()));
    body.push_str(&super::diff::section(
        &job,
        timeline.latest.as_ref(),
        state_dir,
    ));
    body.push_str(&timeline.html);
    body.push_str(&super::spend::section(&timeline.journals));
    body.push_str(&super::trail::history(&history));
    body.push_str(&super::policy::section(&timeline.policies));
    body.push_str(&super::decisions::render(&decisions));
    body.push_str(&super::trail::audit(&audit));
    let title = job.spec.nickname.clone().unwrap_or_else(|| job.id.clone());
    Ok(document(&title, viewer, &body))
}

/// Who holds the job: the liveness badge and the lease itself as the store keeps it.
fn lease(store: &dyn JobStore, job: &Job, live: &Liveness, fleet: &Fleet) -> String {
    let mut out = format!(
        "<section class=\"lease\">\n<h2>Lease</h2>\n<p>{}</p>\n",
        live.cell()
    );
    // The lease row even at rest: a verb refused as busy shows why.
    if let Ok(Some(l)) = store.lease(&job.id) {
        let when = match &fleet.now {
            Ok(now) if l.live_at(*now) => format!("expires {}", at(l.until_ms)),
            Ok(_) => format!("expired {}", at(l.until_ms)),
            Err(_) => format!("until {}", at(l.until_ms)),
        };
        w!(
            out,
            "<p><small>runner <code>{}</code>, fencing token {}, {when}</small></p>\n",
            Esc(&l.runner),
            l.fence
        );
    }
    out.push_str("</section>\n");
    out
}

/// The spec and the job's counters, as a definition list.
fn spec(job: &Job, now: u64) -> String {
    let s = &job.spec;
    let mut out = String::from("<section class=\"spec\">\n<h2>Job</h2>\n<dl>\n");
    let mut item = |k: &str, v: String| w!(out, "<dt>{k}</dt><dd>{v}</dd>\n");
    if let Some(n) = &s.nickname {
        item("Nickname", Esc(n).to_string());
    }
    item(
        "Task",
        format!("<pre class=\"task\">{}</pre>", Esc(&s.task)),
    );
    if let Some(b) = &s.branch {
        item("Branch", format!("<code>{}</code>", Esc(b)));
    }
    if let Some(r) = &s.remote {
        item("Remote", format!("<code>{}</code>", Esc(r)));
    }
    item(
        "Source",
        format!(
            "<code>{}</code>{}",
            Esc(&s.source.display().to_string()),
            s.base
                .as_deref()
                .map(|b| format!(" @ <code>{}</code>", Esc(b)))
                .unwrap_or_default()
        ),
    );
    item("Worker", format!("<code>{}</code>", Esc(&s.worker)));
    item("Auditor", format!("<code>{}</code>", Esc(&s.auditor)));
    if !s.panel.is_empty() {
        item(
            "Panel",
            format!(
                "<code>{}</code> ({:?})",
                Esc(&s.panel.join(", ")),
                s.aggregate
            ),
        );
    }
    item(
        "Policy",
        s.policy.as_ref().map_or("(built-in)".to_string(), |p| {
            format!("<code>{}</code>", Esc(&p.display().to_string()))
        }),
    );
    item("Risk", s.risk.as_str().to_string());
    item(
        "Steps",
        format!(
            "{} <small>(loops {}/{} since creation or the last resubmit)</small>",
            job.steps, job.loops, s.limits.max_loops
        ),
    );
    for (k, v) in &s.inputs {
        item("Input", format!("<code>{}</code> = {}", Esc(k), Esc(v)));
    }
    for c in &s.checks {
        item(
            "Check",
            format!("{}: <code>{}</code>", Esc(&c.name), Esc(&c.run)),
        );
    }
    item(
        "Created",
        format!(
            "{} <small>({})</small>",
            at(job.created_ms),
            ago(job.created_ms, now)
        ),
    );
    item(
        "Updated",
        format!(
            "{} <small>({})</small>",
            at(job.updated_ms),
            ago(job.updated_ms, now)
        ),
    );
    if let Some(ws) = &job.workspace {
        item(
            "Workspace",
            format!(
                "<code>{}</code>{}",
                Esc(&ws.path.display().to_string()),
                ws.branch
                    .as_deref()
                    .map(|b| format!(" (branch <code>{}</code>)", Esc(b)))
                    .unwrap_or_default()
            ),
        );
    }
    if let Some(f) = job.feedback() {
        item(
            "Feedback waiting",
            format!("<pre class=\"feedback\">{}</pre>", Esc(&f.critique)),
        );
    }
    if let Some(l) = &job.landed {
        item(
            "Landed",
            format!("{} by {}, {}", Esc(&l.to_string()), Esc(&l.by), at(l.at_ms)),
        );
    }
    out.push_str("</dl>\n</section>\n");
    out
}
