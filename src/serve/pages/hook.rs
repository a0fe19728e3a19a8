//! A session's policy decision (a hook's call, from its log) in a few words for a page: the
//! hook, the tool it was asked about, what it answered and why — escaped. Routine answers
//! of the built-in defaults are left out by the caller ([`routine`]).

use super::html::Esc;
use crate::policy::GuardOutcome;
use crate::store::{DecisionInput, DecisionRecord, DecisionResult};

/// An answer that changes nothing: a guard allowing, an observer returning, a prompt.
pub(crate) fn routine(r: &DecisionResult) -> bool {
    matches!(
        r,
        DecisionResult::Guard(GuardOutcome::Allow)
            | DecisionResult::Observed
            | DecisionResult::Prompt(_)
    )
}

/// A decision in a few words: the hook (and tool) and what it answered, escaped.
pub(crate) fn line(d: &DecisionRecord) -> String {
    let key = d.key.clone().unwrap_or_else(|| d.hook.to_string());
    let builtin = if d.builtin { " (built-in)" } else { "" };
    let reason = |r: &Option<String>| {
        r.as_ref()
            .map(|r| format!(": {}", Esc(r)))
            .unwrap_or_default()
    };
    let answer = match &d.result {
        DecisionResult::Verdict(v) => format!(
            "<b>{}</b>{}{}",
            crate::policy::verdict_word(v.verdict).to_uppercase(),
            v.confidence
                .map(|c| format!(" (confidence {c:.2})"))
                .unwrap_or_default(),
            reason(&v.reason)
        ),
        DecisionResult::Salvage(s) => format!(
            "{}{}",
            format!("{:?}", s.salvage).to_lowercase(),
            reason(&s.reason)
        ),
        DecisionResult::Guard(GuardOutcome::Allow) => "allow".into(),
        DecisionResult::Guard(GuardOutcome::Veto(why)) => format!("<b>VETO</b>: {}", Esc(why)),
        DecisionResult::Prompt(p) => format!("prompt ({} bytes)", p.len()),
        DecisionResult::Observed => "ok".into(),
        DecisionResult::Permit(p) => {
            let word = if p.allow { "allow" } else { "<b>DENY</b>" };
            format!("{word}{}", reason(&p.reason))
        }
        DecisionResult::Checks(c) => format!("{} check(s)", c.len()),
        DecisionResult::Egress(None) => "default (refused)".into(),
        DecisionResult::Egress(Some(e)) => {
            let word = if e.allow { "allow" } else { "<b>DENY</b>" };
            format!("{word}{}", reason(&e.reason))
        }
        DecisionResult::Error { message, kind } => {
            format!("error ({}): {}", Esc(kind), Esc(message))
        }
    };
    let tool = match &d.input {
        DecisionInput::Permit { tool, .. } => format!(" <code>{}</code>", Esc(tool)),
        DecisionInput::Egress { host, port, .. } => {
            format!(" <code>{}:{port}</code>", Esc(host))
        }
        _ => String::new(),
    };
    format!(
        "<span class=\"hook\">{}</span>{tool}{builtin} → {answer}",
        Esc(&key)
    )
}
