//! A job's action forms: the verbs its state allows (asked of the job's state machine,
//! [`crate::job::allowed`], never a copy of its rules) that the viewer's scopes cover. Each is
//! a plain POST to `/jobs/{id}/{verb}` carrying what the page showed — the job's `state`, its
//! `attempt` (steps taken) and the latest artifact's `diff_hash` — so the server can refuse a
//! verb given on a page older than the job: an approval is bound to what was seen.

use super::Viewer;
use super::html::{Esc, job_path, w};
use crate::job::{Job, JobTrigger, allowed};

/// The verbs the `approve` scope gives, in the order shown.
pub(crate) const APPROVE_VERBS: [JobTrigger; 3] =
    [JobTrigger::Approve, JobTrigger::Reject, JobTrigger::Land];

/// The verbs the `operate` scope gives.
pub(crate) const OPERATE_VERBS: [JobTrigger; 4] = [
    JobTrigger::Resubmit,
    JobTrigger::Suspend,
    JobTrigger::Resume,
    JobTrigger::Cancel,
];

/// The verbs `viewer` may give to a job in `job`'s state, in the state machine's order.
pub(crate) fn verbs(job: &Job, viewer: &Viewer) -> Vec<JobTrigger> {
    allowed(job.state())
        .into_iter()
        // The core's rule, judged again on the POST.
        .filter(|v| *v != JobTrigger::Land || crate::job::land::may_land(job).is_ok())
        .filter(|v| {
            (viewer.can_approve && APPROVE_VERBS.contains(v))
                || (viewer.can_operate && OPERATE_VERBS.contains(v))
        })
        .collect()
}

/// The forms' section; empty when the viewer may give no verb here.
pub(crate) fn actions(job: &Job, diff_hash: Option<&str>, viewer: &Viewer) -> String {
    let verbs = verbs(job, viewer);
    if verbs.is_empty() {
        return String::new();
    }
    let binding = format!(
        "<input type=\"hidden\" name=\"state\" value=\"{}\">\
         <input type=\"hidden\" name=\"attempt\" value=\"{}\">\
         <input type=\"hidden\" name=\"diff_hash\" value=\"{}\">",
        job.state().as_str(),
        job.steps,
        Esc(diff_hash.unwrap_or(""))
    );
    let mut out = String::from("<section class=\"actions\">\n<h2>Actions</h2>\n");
    for verb in verbs {
        let name = verb.name();
        w!(
            out,
            "<form class=\"verb verb-{name}\" method=\"post\" action=\"{}/{name}\">{binding}",
            Esc(&job_path(&job.id))
        );
        match verb {
            JobTrigger::Reject => out.push_str(
                "<label>Feedback <small>(what the next attempt is told)</small>\
                 <textarea name=\"feedback\" rows=\"4\" required></textarea></label>\
                 <label>Line comments <small>(one per line: <code>file:line: text</code>)</small>\
                 <textarea name=\"comments\" rows=\"3\" \
                 placeholder=\"src/lib.rs:12: this panics on an empty input\"></textarea></label>",
            ),
            JobTrigger::Approve => {
                if let Some(h) = diff_hash.filter(|h| !h.is_empty()) {
                    w!(
                        out,
                        "<p class=\"bound\">Approves the diff <code>{}</code> of attempt {}.</p>",
                        Esc(short(h)),
                        job.steps
                    );
                }
            }
            _ => {}
        }
        w!(
            out,
            "<button type=\"submit\">{}</button></form>\n",
            label(verb)
        );
    }
    out.push_str("</section>\n");
    out
}

/// The form that says something to a worker (`POST {path}/say`, the `operate` scope), for a
/// session or job that has not ended: `oneshot say`, from the page.
pub(crate) fn say(path: &str, whose: &str) -> String {
    format!(
        "<section class=\"say\">\n<h2>Say</h2>\n<form class=\"verb verb-say\" method=\"post\" \
         action=\"{}/say\"><label>A message to {} <small>(the running agent takes it in at \
         its next step — Claude, Codex, Gemini; otherwise the next worker prompt carries it)\
         </small><textarea name=\"text\" rows=\"3\" required></textarea></label>\
         <label><input type=\"checkbox\" name=\"now\" value=\"1\"> now <small>(preempt the \
         running turn)</small></label><button type=\"submit\">Say</button></form>\n</section>\n",
        Esc(path),
        Esc(whose)
    )
}

/// A button's words.
fn label(verb: JobTrigger) -> &'static str {
    match verb {
        JobTrigger::Approve => "Approve",
        JobTrigger::Reject => "Reject with feedback",
        JobTrigger::Resubmit => "Resubmit",
        JobTrigger::Suspend => "Suspend",
        JobTrigger::Resume => "Resume",
        JobTrigger::Cancel => "Cancel",
        JobTrigger::Land => "Land",
        other => other.name(),
    }
}

/// A hash cut to what a person compares (`sha256:` and 12 hex digits).
pub(crate) fn short(hash: &str) -> &str {
    let end = hash.find(':').map_or(0, |i| i + 1) + 12;
    hash.get(..end).unwrap_or(hash)
}
