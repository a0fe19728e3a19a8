//! The inbox: what waits for a human — a result to approve or reject, a job to fix and
//! resubmit — oldest wait first, with how long it has waited (since its last move, by the
//! store's clock).

use super::Viewer;
use super::html::{Esc, document, job_link, state_badge, w};
use super::time::ago;
use crate::job::JobState;
use crate::job::store::{JobStore, JobStoreError, JobSummary, ListFilter};

/// The states whose jobs wait for a human's verdict or fix.
pub(crate) const WAITING: [JobState; 2] =
    [JobState::ApprovalRequired, JobState::InterventionRequired];

/// The waiting jobs, oldest wait first (ties by id, so the order is stable).
pub(crate) fn waiting(store: &dyn JobStore) -> Result<Vec<JobSummary>, JobStoreError> {
    let mut jobs = Vec::new();
    for state in WAITING {
        jobs.extend(store.list(&ListFilter { state: Some(state) })?);
    }
    jobs.sort_by(|a, b| {
        a.updated_ms
            .cmp(&b.updated_ms)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(jobs)
}

/// The inbox page.
pub(crate) fn render(store: &dyn JobStore, viewer: &Viewer) -> Result<String, JobStoreError> {
    let jobs = waiting(store)?;
    let now = store
        .now_ms()
        .unwrap_or_else(|_| super::time::local_now_ms());
    let mut body = format!(
        "<h1>Inbox <span class=\"count\">{}</span></h1>\n",
        jobs.len()
    );
    // Live as the board is: any job that moves may enter or leave it.
    body.push_str(&super::html::live_feed(super::BOARD_EVENTS_PATH, None));
    if jobs.is_empty() {
        body.push_str("<p class=\"empty\">Nothing waits for a human.</p>\n");
        return Ok(document("Inbox", viewer, &body));
    }
    body.push_str(
        "<table class=\"inbox\">\n<thead><tr><th>Waiting</th><th>Job</th><th>State</th>\
         <th>Task</th><th>Risk</th><th>Steps</th></tr></thead>\n<tbody>\n",
    );
    for j in &jobs {
        let nick = j
            .nickname
            .as_deref()
            .map(|n| format!("<strong class=\"nick\">{}</strong> ", Esc(n)))
            .unwrap_or_default();
        w!(
            body,
            "<tr class=\"job\" data-job=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{nick}{}</td>\
             <td class=\"risk risk-{}\">{}</td><td class=\"num\">{}</td></tr>\n",
            Esc(&j.id),
            ago(j.updated_ms, now),
            job_link(&j.id),
            state_badge(j.state),
            Esc(&j.title),
            j.risk.as_str(),
            j.risk.as_str(),
            j.steps
        );
    }
    body.push_str("</tbody>\n</table>\n");
    Ok(document("Inbox", viewer, &body))
}
