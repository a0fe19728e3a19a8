//! The decisions a job's policy made about it (the store's decision records): what the
//! `approve` hook answered at each harvest and where the job went, how each transient failure
//! was retried — what `oneshot job replay` asks another policy again.

use super::forms::short;
use super::html::{Esc, w};
use super::time::at;
use crate::job::JobTrigger;
use crate::job::decision::{JobDecision, Judgement};

/// The decisions' section; empty when the policy decided nothing yet.
pub(crate) fn render(decisions: &[JobDecision]) -> String {
    if decisions.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section class=\"decisions\">\n<h2>Decisions</h2>\n<table>\n<thead><tr><th>#</th>\
         <th>When</th><th>Step</th><th>Hook</th><th>Policy</th><th>What it decided</th></tr>\
         </thead>\n<tbody>\n",
    );
    for d in decisions {
        let policy = d.policy_hash.as_deref().map_or_else(
            || "<small>did not load</small>".to_string(),
            |h| format!("<code title=\"{}\">{}</code>", Esc(h), Esc(short(h))),
        );
        w!(
            out,
            "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{policy}</td><td>{}</td></tr>\n",
            d.seq,
            at(d.at_ms),
            d.step,
            d.judgement.hook(),
            what(&d.judgement)
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
    out
}

/// A judgement in words, escaped.
fn what(j: &Judgement) -> String {
    match j {
        Judgement::Approve {
            answer,
            error,
            outcome,
            reason,
            result,
            ..
        } => {
            let said = match (answer, error) {
                (Some(a), _) => format!(
                    "answered <b>{}</b>{}",
                    a.approval.as_str(),
                    a.reason
                        .as_deref()
                        .map(|r| format!(": {}", Esc(r)))
                        .unwrap_or_default()
                ),
                (None, Some(e)) => format!("<b>failed</b>: {}", Esc(e)),
                (None, None) => "gave no answer".into(),
            };
            let confidence = result
                .confidence
                .map(|c| format!(" · confidence {c:.2}"))
                .unwrap_or_default();
            format!(
                "{said}{confidence} → <b>{}</b> <span class=\"why\">({})</span>",
                Esc(JobTrigger::Harvested(*outcome).name()),
                Esc(reason)
            )
        }
        Judgement::Retry {
            failure,
            retries,
            attempts,
            after_ms,
        } => {
            let then = after_ms.map_or_else(
                || "the retries are spent: a human must look".to_string(),
                |ms| format!("retry after {}", super::time::span(ms)),
            );
            format!(
                "{} <small>(retry {} of {attempts})</small> → {then}",
                Esc(failure),
                retries + 1
            )
        }
    }
}
