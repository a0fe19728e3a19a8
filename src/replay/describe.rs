//! Comparing a new answer with the recorded one, and saying both in a few words.

use crate::policy::GuardOutcome;
use crate::store::DecisionResult;

/// How wide an old or new value is shown in a difference.
const SHOWN: usize = 60;

/// Whether two answers are the same decision: the same verdict, salvage or guard word, the
/// same prompt text, both failures. With `reasons`, reasons, confidences and error messages
/// must match too.
pub(crate) fn same(old: &DecisionResult, new: &DecisionResult, reasons: bool) -> bool {
    use DecisionResult as R;
    match (old, new) {
        (R::Verdict(a), R::Verdict(b)) => {
            a.verdict == b.verdict
                && (!reasons || (a.reason == b.reason && a.confidence == b.confidence))
        }
        (R::Salvage(a), R::Salvage(b)) => {
            a.salvage == b.salvage && (!reasons || a.reason == b.reason)
        }
        (R::Guard(GuardOutcome::Allow), R::Guard(GuardOutcome::Allow)) => true,
        (R::Guard(GuardOutcome::Veto(a)), R::Guard(GuardOutcome::Veto(b))) => !reasons || a == b,
        (R::Prompt(a), R::Prompt(b)) => a == b,
        (R::Observed, R::Observed) => true,
        (R::Checks(a), R::Checks(b)) => a == b,
        (R::Permit(a), R::Permit(b)) => a.allow == b.allow && (!reasons || a.reason == b.reason),
        (R::Egress(None), R::Egress(None)) => true,
        (R::Egress(Some(a)), R::Egress(Some(b))) => {
            a.allow == b.allow && (!reasons || a.reason == b.reason)
        }
        (R::Error { message: a, .. }, R::Error { message: b, .. }) => !reasons || a == b,
        _ => false,
    }
}

/// `old` and `new` as short one-line texts for a table, reasons included: `retry: the tests
/// fail` → `done`. Prompts that differ show their first differing line (see [`prompt_lines`]).
pub(crate) fn describe_pair(old: &DecisionResult, new: &DecisionResult) -> (String, String) {
    if let (DecisionResult::Prompt(a), DecisionResult::Prompt(b)) = (old, new) {
        let (line, a, b) = prompt_lines(a, b);
        return (format!("line {line}: {a}"), format!("line {line}: {b}"));
    }
    (describe(old, true), describe(new, true))
}

/// Where two prompts part: the number (from 1) of their first differing line, and that line of
/// each, cut around the first differing character so the change shows (`(none)` for a prompt
/// that ends before it, `(empty line)` for a blank one).
pub(crate) fn prompt_lines(a: &str, b: &str) -> (usize, String, String) {
    let (mut la, mut lb) = (a.lines(), b.lines());
    let mut n = 0;
    loop {
        n += 1;
        let (x, y) = (la.next(), lb.next());
        if x == y {
            if x.is_none() {
                return (n, "(none)".into(), "(none)".into());
            }
            continue;
        }
        let (xs, ys) = (x.unwrap_or(""), y.unwrap_or(""));
        let at = first_difference(xs, ys).saturating_sub(SHOWN / 3);
        let at = floor_boundary(xs, at).min(floor_boundary(ys, at));
        let cut = |line: Option<&str>| match line {
            None => "(none)".to_string(),
            Some("") => "(empty line)".to_string(),
            Some(s) => {
                let text = shorten(&s[at.min(s.len())..]);
                if at > 0 { format!("…{text}") } else { text }
            }
        };
        return (n, cut(x), cut(y));
    }
}

/// One answer as a short text: `retry`, `deny: too many files`, `error: strict.lua:3: …`.
pub(crate) fn describe(result: &DecisionResult, reasons: bool) -> String {
    let with = |word: &str, reason: &Option<String>| match reason {
        Some(r) if reasons => shorten(&format!("{word}: {r}")),
        _ => word.to_string(),
    };
    match result {
        DecisionResult::Verdict(v) => with(crate::policy::verdict_word(v.verdict), &v.reason),
        DecisionResult::Salvage(s) => with(salvage_word(s.salvage), &s.reason),
        DecisionResult::Guard(GuardOutcome::Allow) => "allow".to_string(),
        DecisionResult::Guard(GuardOutcome::Veto(why)) => shorten(&format!("deny: {why}")),
        DecisionResult::Prompt(p) => shorten(p),
        DecisionResult::Observed => "ok".to_string(),
        DecisionResult::Checks(c) if c.is_empty() => "no checks".to_string(),
        DecisionResult::Checks(c) => shorten(
            &c.iter()
                .map(|c| format!("`{}`", c.run))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        DecisionResult::Permit(p) if p.allow => with("allow", &p.reason),
        DecisionResult::Permit(p) => with("deny", &p.reason),
        DecisionResult::Egress(None) => "default (refused: not on the allowlist)".to_string(),
        DecisionResult::Egress(Some(e)) if e.allow => with("allow", &e.reason),
        DecisionResult::Egress(Some(e)) => with("deny", &e.reason),
        DecisionResult::Error { message, .. } => shorten(&format!("error: {message}")),
    }
}

fn salvage_word(s: crate::machine::Salvage) -> &'static str {
    match s {
        crate::machine::Salvage::Success => "success",
        crate::machine::Salvage::Partial => "partial",
        crate::machine::Salvage::Nothing => "nothing",
    }
}

/// At most [`SHOWN`] characters on one line, `…` marking a cut.
pub(crate) fn shorten(s: &str) -> String {
    let mut out = String::with_capacity(SHOWN + 3);
    for (n, c) in s.chars().enumerate() {
        if n == SHOWN {
            out.push('…');
            break;
        }
        out.push(if c == '\n' || c == '\r' || c == '\t' {
            ' '
        } else {
            c
        });
    }
    out
}

fn first_difference(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

fn floor_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}
