//! What happened to a job, as the store recorded it: its history (every move: when, from
//! what to what, by which trigger, by whom, why) and its audit trail (every human act, with
//! its actor and what it carried).

use super::html::{Esc, state_badge, w};
use super::time::at;
use crate::job::record::{AuditEntry, Transition};
use serde_json::Value;

/// The history's section.
pub(crate) fn history(moves: &[Transition]) -> String {
    let mut out = String::from("<section class=\"history\">\n<h2>History</h2>\n");
    if moves.is_empty() {
        out.push_str("<p class=\"empty\">It has not moved since it was made.</p>\n</section>\n");
        return out;
    }
    out.push_str(
        "<table>\n<thead><tr><th>When</th><th>Move</th><th>Trigger</th><th>By</th>\
         <th>Why</th></tr></thead>\n<tbody>\n",
    );
    for t in moves {
        w!(
            out,
            "<tr><td>{}</td><td>{} → {}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
            at(t.at_ms),
            state_badge(t.from),
            state_badge(t.to),
            Esc(t.trigger.name()),
            Esc(&t.by),
            t.reason
                .as_ref()
                .map_or(String::new(), |r| Esc(&r.to_string()).to_string())
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
    out
}

/// The audit trail's section.
pub(crate) fn audit(entries: &[AuditEntry]) -> String {
    let mut out = String::from("<section class=\"audit\">\n<h2>Audit trail</h2>\n");
    if entries.is_empty() {
        out.push_str("<p class=\"empty\">No entries.</p>\n</section>\n");
        return out;
    }
    out.push_str(
        "<table>\n<thead><tr><th>#</th><th>When</th><th>Actor</th><th>Action</th>\
         <th>Details</th></tr></thead>\n<tbody>\n",
    );
    for e in entries {
        w!(
            out,
            "<tr><td class=\"num\">{}</td><td>{}</td><td><b>{}</b></td><td>{}</td><td>{}</td></tr>\n",
            e.seq,
            at(e.at_ms),
            Esc(&e.actor),
            e.action.as_str(),
            details(e)
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
    out
}

/// An entry's metadata: `from → to` first, then each other field as `key: value`.
fn details(e: &AuditEntry) -> String {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out = String::new();
    if let (Some(from), Some(to)) = (e.metadata.get("from"), e.metadata.get("to")) {
        w!(out, "{} → {}", Esc(&text(from)), Esc(&text(to)));
    }
    let rest: Vec<String> = e
        .metadata
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "from" | "to"))
        .map(|(k, v)| {
            format!(
                "<span class=\"meta\"><i>{}</i>: {}</span>",
                Esc(k),
                Esc(&text(v))
            )
        })
        .collect();
    if !rest.is_empty() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&rest.join(" "));
    }
    out
}
