//! The built-in verdict parser: what oneshot reads from an auditor's output when the policy has
//! no `verdict` hook; and the object in that output the hook is given as `ctx.structured`.

use super::decision::VerdictDecision;
use crate::machine::Verdict;
use regex::Regex;
use std::sync::LazyLock;

/// The reason recorded when the auditor's output holds no recognisable verdict.
pub const NO_VERDICT_REASON: &str =
    "the answer held no verdict: end it with VERDICT: DONE, RETRY or IMPOSSIBLE";

// A `VERDICT: X` line, tolerating markdown bold and `=` (auditors decorate their answers).
static VERDICT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*[*_#>\s]*verdict[*_]*\s*[:=]\s*[*_]*\s*(done|retry|impossible)\b[*_]*(.*)$",
    )
    .expect("verdict regex compiles")
});
static REASON_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*[*_]*(?:reason|critique)[*_]*\s*[:=]\s*(.*)$").expect("reason regex")
});
// The built-in `verdict` schema, compiled once: every auditor's answer is checked against it.
static VERDICT_SCHEMA: LazyLock<crate::schema::Validator> = LazyLock::new(|| {
    crate::schema::Schema::from_builtin(&crate::schema::VERDICT)
        .validator()
        .expect("the built-in verdict schema compiles")
});
static CONFIDENCE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*[*_]*confidence[*_]*\s*[:=]\s*([0-9]*\.?[0-9]+)").expect("conf regex")
});

/// The object in an auditor's answer that fits the built-in `verdict` schema (the whole answer,
/// a fenced block, or the last object in its prose): what the `verdict` hook, and the built-in
/// reader after it, see as `ctx.structured`. `Err` says what does not fit (written for the
/// auditor); the verdict is then read from the answer's words. A session's auditor and a job's
/// panel member are read alike: this, then [`PolicyHost::verdict`](super::PolicyHost::verdict).
pub(crate) fn structured_verdict(
    output: &str,
) -> Result<serde_json::Value, crate::schema::AnswerError> {
    VERDICT_SCHEMA.answer(output)
}

/// Reads a verdict from an auditor's output.
///
/// 1. A JSON object with a `verdict` field — the whole output, or any line that is a JSON
///    object; the last one wins. `reason` and `confidence` fields are taken along.
/// 2. Otherwise a line `VERDICT: DONE|RETRY|IMPOSSIBLE` (any case; the last one wins). Text after
///    the verdict on that line, or a following `REASON:` line, is the reason; a `CONFIDENCE:`
///    line after it gives the confidence.
/// 3. Otherwise no verdict (`verdict: None`), with the reason [`NO_VERDICT_REASON`]: the
///    session asks the auditor again rather than spending a worker iteration.
pub fn parse_verdict(output: &str) -> VerdictDecision {
    read_verdict(output).unwrap_or(VerdictDecision {
        verdict: None,
        reason: Some(NO_VERDICT_REASON.to_string()),
        confidence: None,
    })
}

/// The verdict in an auditor's output as [`parse_verdict`] reads it, or `None` when there is
/// none (what `oneshot.parse_verdict` gives a policy).
pub fn read_verdict(output: &str) -> Option<VerdictDecision> {
    json_verdict(output).or_else(|| line_verdict(output))
}

/// Parses a verdict name as the hooks and the built-in parser spell it (any case).
pub(crate) fn verdict_from_name(name: &str) -> Option<Verdict> {
    match name.trim().to_ascii_lowercase().as_str() {
        "done" => Some(Verdict::Done),
        "retry" => Some(Verdict::Retry),
        "impossible" => Some(Verdict::Impossible),
        _ => None,
    }
}

/// The word a verdict is written as (`done`, `retry`, `impossible`), and `none` for no verdict.
pub fn verdict_word(verdict: Option<Verdict>) -> &'static str {
    match verdict {
        Some(Verdict::Done) => "done",
        Some(Verdict::Retry) => "retry",
        Some(Verdict::Impossible) => "impossible",
        None => "none",
    }
}

fn json_verdict(output: &str) -> Option<VerdictDecision> {
    if let Some(whole) = json_object(output.trim()) {
        return Some(whole);
    }
    output
        .lines()
        .rev()
        .find_map(|line| json_object(line.trim()))
}

fn json_object(text: &str) -> Option<VerdictDecision> {
    if !(text.starts_with('{') && text.ends_with('}')) {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let verdict = verdict_from_name(value.get("verdict")?.as_str()?)?;
    let reason = value
        .get("reason")
        .or_else(|| value.get("critique"))
        .and_then(|r| r.as_str())
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(String::from);
    let confidence = value.get("confidence").and_then(serde_json::Value::as_f64);
    Some(VerdictDecision {
        verdict: Some(verdict),
        reason,
        confidence,
    })
}

fn line_verdict(output: &str) -> Option<VerdictDecision> {
    let lines: Vec<&str> = output.lines().collect();
    let (at, caps) = lines
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, line)| VERDICT_LINE.captures(line).map(|c| (i, c)))?;
    let verdict = verdict_from_name(&caps[1])?;
    let inline = caps[2]
        .trim_start_matches(|c: char| c.is_whitespace() || "-–—:.,;*_".contains(c))
        .trim();
    let mut reason = (!inline.is_empty()).then(|| inline.to_string());
    let mut confidence = None;
    for (i, line) in lines.iter().enumerate().skip(at + 1) {
        if let Some(c) = CONFIDENCE_LINE.captures(line) {
            confidence = c[1].parse::<f64>().ok();
        } else if reason.is_none()
            && let Some(c) = REASON_LINE.captures(line)
        {
            reason = Some(reason_block(c[1].trim(), &lines[i + 1..]));
        }
    }
    Some(VerdictDecision {
        verdict: Some(verdict),
        reason: reason.filter(|r| !r.is_empty()),
        confidence,
    })
}

/// A `REASON:` may run on over the following lines, up to a blank line.
fn reason_block(first: &str, rest: &[&str]) -> String {
    let mut text = first.to_string();
    for line in rest.iter().take_while(|l| !l.trim().is_empty()) {
        if CONFIDENCE_LINE.is_match(line) {
            break;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(line.trim());
    }
    text
}
