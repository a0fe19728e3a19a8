//! One OPA-style test case: call a hook through the same Rust path the engine uses and compare
//! its answer with `expect` (and optionally `reason`, or an expected `error`).

use super::super::schema::suggest;
use super::super::{
    ApprovalJob, ApprovalResult, GuardOutcome, HookCtx, NotifyDecision, NotifyFacts, PolicyHost,
};
use super::input::{overlay, overlay_with, to_json};
use crate::machine::{Salvage, SessionState};
use crate::process::{Evidence, Role};
use mlua::{Table, Value};

/// The keys a case table may have.
const CASE_KEYS: [&str; 8] = [
    "name", "hook", "input", "expect", "reason", "error", "from", "to",
];

/// The hooks a case may call.
const CASE_HOOKS: [&str; 10] = [
    "verdict",
    "salvage",
    "guard",
    "next_prompt",
    "audit_prompt",
    "on_transition",
    "permit",
    "egress",
    "approve",
    "on_notify",
];

/// The keys a case's `input` may have.
const INPUT_KEYS: [&str; 12] = [
    "ctx", "output", "evidence", "tool", "input", "role", "result", "job", "event", "host", "port",
    "agent",
];

/// Why a case failed, and where, when the failure has a place of its own (a hook's error).
pub(super) struct Failure {
    pub message: String,
    pub location: Option<String>,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            message,
            location: None,
        }
    }
}

/// What the hook answered, reduced to what `expect` can describe.
enum Answer {
    Text(String),
    Bool(bool),
    /// An `on_notify` that enriched the event: `{ extra = … }`.
    Json(serde_json::Value),
    Nothing,
}

impl Answer {
    fn show(&self) -> String {
        match self {
            Answer::Text(s) => format!("{s:?}"),
            Answer::Bool(b) => b.to_string(),
            Answer::Json(j) => j.to_string(),
            Answer::Nothing => "nothing".to_string(),
        }
    }
}

/// Runs `case` against `host`.
pub(super) fn run(host: &PolicyHost, case: &Table) -> Result<(), Failure> {
    for pair in case.pairs::<Value, Value>() {
        let (key, _) = pair.map_err(|e| e.to_string())?;
        let key = match &key {
            Value::String(s) => s.to_string_lossy(),
            _ => return Err("test case keys must be names".to_string().into()),
        };
        if !CASE_KEYS.contains(&key.as_str()) {
            let hint = suggest(&key, &CASE_KEYS)
                .map(|s| format!("; did you mean {s}?"))
                .unwrap_or_default();
            return Err(format!("unknown key `{key}` in the test case{hint}").into());
        }
    }
    let hook = string(case, "hook")?.ok_or("the test case has no `hook`".to_string())?;
    if !CASE_HOOKS.contains(&hook.as_str()) {
        let hint = suggest(&hook, &CASE_HOOKS)
            .map(|s| format!("; did you mean {s}?"))
            .unwrap_or_default();
        return Err(format!("unknown hook {hook:?} in the test case{hint}").into());
    }
    let input: Option<Table> = table(case, "input")?;
    let field = |name: &str| -> Result<Option<Table>, String> {
        match &input {
            Some(t) => table(t, name),
            None => Ok(None),
        }
    };
    if let Some(input) = &input {
        for pair in input.pairs::<Value, Value>() {
            let (key, _) = pair.map_err(|e| e.to_string())?;
            let key = key.to_string().unwrap_or_default();
            if !INPUT_KEYS.contains(&key.as_str()) {
                return Err(format!(
                    "unknown key `{key}` in input; use ctx, output (verdict), evidence (salvage), \
                     tool, input and role (permit), host, port, agent and role (egress), result \
                     and job (approve) or event (on_notify)"
                )
                .into());
            }
        }
    }
    let transition = || -> Result<(SessionState, SessionState), String> {
        let state = |key: &str| -> Result<SessionState, String> {
            let name = string(case, key)?
                .ok_or_else(|| format!("a {hook} case needs `from` and `to` states"))?;
            name.parse::<SessionState>()
                .map_err(|_| format!("`{key}` = {name:?} is not a session state"))
        };
        Ok((state("from")?, state("to")?))
    };
    let mut base = HookCtx {
        iteration: 1,
        max_iterations: host.limits().max_iterations,
        ..HookCtx::default()
    };
    if hook == "guard" || hook == "on_transition" {
        base.state = Some(transition()?.0);
    }
    // Fields the engine leaves out when empty; `structured` is the verdict hook's alone.
    // `diff` is a panel auditor's.
    let mut optional = vec![
        ("open_criteria_streak", serde_json::json!(0)),
        ("diff", serde_json::Value::Null),
    ];
    if hook == "verdict" {
        optional.push(("structured", serde_json::Value::Null));
    }
    let ctx = match field("ctx")? {
        Some(t) => overlay_with(&base, "ctx", &t, optional)?,
        None => base,
    };
    let result = match hook.as_str() {
        "verdict" => {
            let output = match &input {
                Some(t) => string(t, "output")?.unwrap_or_default(),
                None => String::new(),
            };
            host.verdict(&output, &ctx).map(|d| {
                let name = crate::policy::verdict_word(d.verdict);
                (Answer::Text(name.into()), d.reason)
            })
        }
        "salvage" => {
            let evidence = match field("evidence")? {
                Some(t) => overlay(&Evidence::default(), "evidence", &t)?,
                None => Evidence::default(),
            };
            host.salvage(&evidence, &ctx).map(|d| {
                let name = match d.salvage {
                    Salvage::Success => "success",
                    Salvage::Partial => "partial",
                    Salvage::Nothing => "nothing",
                };
                (Answer::Text(name.into()), d.reason)
            })
        }
        "guard" => {
            let (from, to) = transition()?;
            host.guard(from, to, &ctx).map(|g| match g {
                GuardOutcome::Allow => (Answer::Bool(true), None),
                GuardOutcome::Veto(reason) => (Answer::Bool(false), Some(reason)),
            })
        }
        "next_prompt" => host.next_prompt(&ctx).map(|p| (Answer::Text(p), None)),
        "audit_prompt" => host.audit_prompt(&ctx).map(|p| (Answer::Text(p), None)),
        "permit" => {
            let (role, tool, args) = permit_input(input.as_ref())?;
            // `try_permit`: a failing hook fails the case (or meets `error`) instead of
            // hiding behind the deny a session would get.
            host.try_permit(role, &tool, &args, &ctx).map(|d| {
                let name = if d.allow { "allow" } else { "deny" };
                (Answer::Text(name.into()), d.reason)
            })
        }
        "egress" => {
            let req = egress_input(input.as_ref())?;
            // As a session would decide: nil leaves it to the default, which refuses.
            host.try_egress(&req, &ctx).map(|d| match d {
                Some(d) => {
                    let name = if d.allow { "allow" } else { "deny" };
                    (Answer::Text(name.into()), d.reason)
                }
                None => (
                    Answer::Text("deny".into()),
                    Some(super::super::NOT_ALLOWED.into()),
                ),
            })
        }
        "approve" => {
            let (result, job) = approve_input(field("result")?, field("job")?)?;
            // The host's own path: an "approve" Rust refuses (a session that did not complete)
            // is the error a job would get, and `error = "…"` can expect it.
            host.approve(&result, &job)
                .map(|d| (Answer::Text(d.approval.as_str().into()), d.reason))
        }
        "on_notify" => {
            if field("ctx")?.is_some() {
                return Err("an on_notify case's ctx is its input.event"
                    .to_string()
                    .into());
            }
            let facts = notify_input(field("event")?)?;
            host.on_notify(&facts).map(|d| match d {
                NotifyDecision::Send { extra } if extra.is_empty() => (Answer::Bool(true), None),
                NotifyDecision::Send { extra } => {
                    (Answer::Json(serde_json::json!({ "extra": extra })), None)
                }
                NotifyDecision::Suppress { reason } => (Answer::Bool(false), reason),
            })
        }
        _ => {
            let (from, to) = transition()?;
            host.on_transition(from, to, &ctx)
                .map(|()| (Answer::Nothing, None))
        }
    };
    let expect: Value = case.raw_get("expect").map_err(|e| e.to_string())?;
    let want_reason: Value = case.raw_get("reason").map_err(|e| e.to_string())?;
    let want_error = string(case, "error")?;
    match (result, want_error) {
        (Err(e), Some(part)) if e.to_string().contains(&part) => Ok(()),
        (Err(e), _) => Err(Failure {
            message: e.to_string(),
            location: e.location(),
        }),
        (Ok((answer, _)), Some(part)) => Err(format!(
            "expected an error containing {part:?}, got {}",
            answer.show()
        )
        .into()),
        (Ok((answer, reason)), None) => {
            check(&expect, &answer).map_err(|m| format!("{m}{}", reason_note(&reason)))?;
            if !want_reason.is_nil() {
                let got = reason
                    .as_ref()
                    .map_or(Answer::Nothing, |r| Answer::Text(r.clone()));
                check(&want_reason, &got).map_err(|m| format!("reason: {m}"))?;
            }
            Ok(())
        }
    }
}

/// A permit case's role (default worker), tool name and tool input.
fn permit_input(input: Option<&Table>) -> Result<(Role, String, serde_json::Value), String> {
    let Some(input) = input else {
        return Err("a permit case needs input.tool".to_string());
    };
    let tool = string(input, "tool")?.ok_or("a permit case needs input.tool".to_string())?;
    let role = role_of(input)?;
    let args: Value = input.raw_get("input").map_err(|e| e.to_string())?;
    let args = match args {
        Value::Nil => serde_json::Value::Object(Default::default()),
        other => to_json(&other, 0).map_err(|e| format!("input.input: {e}"))?,
    };
    Ok((role, tool, args))
}

/// An egress case's connection: `input.host` (required), `port` (default 443), `agent`
/// (default "claude") and `role` (default worker).
fn egress_input(input: Option<&Table>) -> Result<super::super::EgressQuery, String> {
    let need = || "an egress case needs input.host".to_string();
    let input = input.ok_or_else(need)?;
    let host = string(input, "host")?.ok_or_else(need)?;
    let port = match input.raw_get::<Value>("port").map_err(|e| e.to_string())? {
        Value::Nil => 443,
        Value::Integer(p) if (1..=65535).contains(&p) => p as u16,
        Value::Number(p) if p.fract() == 0.0 && (1.0..=65535.0).contains(&p) => p as u16,
        other => {
            return Err(format!(
                "input.port must be a port number (1 to 65535), not {}",
                super::super::lua_ctx::describe(&other)
            ));
        }
    };
    let agent = string(input, "agent")?.unwrap_or_else(|| "claude".into());
    Ok(super::super::EgressQuery {
        host,
        port,
        agent,
        role: role_of(input)?,
    })
}

/// `input.role`: "worker" (the default) or "auditor".
fn role_of(input: &Table) -> Result<Role, String> {
    match string(input, "role")?.as_deref() {
        None | Some("worker") => Ok(Role::Worker),
        Some("auditor") => Ok(Role::Auditor),
        Some(other) => Err(format!(
            "input.role = {other:?}; use \"worker\" or \"auditor\""
        )),
    }
}

/// An approve case's `result` and `job`, over defaults that describe the common case: a
/// session that completed with a `done` verdict, on step 1 of a job with a new job's defaults
/// (high risk, 5 loops, no progress after 2).
fn approve_input(
    result: Option<Table>,
    job: Option<Table>,
) -> Result<(ApprovalResult, ApprovalJob), String> {
    let base_result = ApprovalResult {
        outcome: "COMPLETED".into(),
        completed: true,
        verdict: Some("done".into()),
        ..ApprovalResult::default()
    };
    let limits = crate::approval::JobLimits::default();
    let base_job = ApprovalJob {
        id: "job-test".into(),
        task: "the task".into(),
        step: 1,
        max_loops: limits.max_loops,
        no_progress_limit: limits.no_progress,
        ..ApprovalJob::default()
    };
    let result = match result {
        Some(t) => overlay(&base_result, "result", &t)?,
        None => base_result,
    };
    let job = match job {
        Some(t) => overlay(&base_job, "job", &t)?,
        None => base_job,
    };
    Ok((result, job))
}

/// An on_notify case's event (`input.event`, the hook's `ctx`), over an approval of job
/// `job-test` pending since its fourth transition.
fn notify_input(event: Option<Table>) -> Result<NotifyFacts, String> {
    let base = NotifyFacts {
        kind: "approval_pending".into(),
        job: "job-test".into(),
        title: "the task".into(),
        state: "APPROVAL_REQUIRED".into(),
        reason: Some("the policy asks a human to approve".into()),
        link: None,
        at_ms: 0,
        at: "1970-01-01T00:00:00.000Z".into(),
        cause: "transition 4".into(),
    };
    let facts = match event {
        Some(t) => overlay(&base, "event", &t)?,
        None => base,
    };
    if crate::notify::NotifyKind::from_word(&facts.kind).is_none() {
        let words = crate::notify::NotifyKind::ALL.map(|k| k.as_str());
        return Err(format!(
            "event.kind = {:?} is no event; the kinds are {}",
            facts.kind,
            words.join(", ")
        ));
    }
    Ok(facts)
}

fn reason_note(reason: &Option<String>) -> String {
    reason
        .as_ref()
        .map(|r| format!(" (reason: {r:?})"))
        .unwrap_or_default()
}

/// Compares `answer` with an `expect` (or `reason`) value: a string or boolean for equality,
/// `{ contains = "…" }` or `{ matches = "regex" }` for text, nil for "anything".
fn check(expect: &Value, answer: &Answer) -> Result<(), String> {
    let ok = match (expect, answer) {
        (Value::Nil, _) => true,
        (Value::String(s), Answer::Text(t)) => s.to_string_lossy() == *t,
        (Value::Boolean(b), Answer::Bool(a)) => a == b,
        // `expect = { extra = { … } }`: exactly these fields.
        (Value::Table(_), Answer::Json(j)) => {
            to_json(expect, 0).map_err(|e| format!("expect: {e}"))? == *j
        }
        (Value::Table(m), Answer::Text(t)) => {
            if let Some(part) = string(m, "contains")? {
                t.contains(&part)
            } else if let Some(re) = string(m, "matches")? {
                regex::Regex::new(&re)
                    .map_err(|e| format!("bad `matches` regex {re:?}: {e}"))?
                    .is_match(t)
            } else {
                return Err(
                    "an expect table must be { contains = \"…\" } or { matches = \"…\" }".into(),
                );
            }
        }
        _ => false,
    };
    if ok {
        return Ok(());
    }
    let want = match expect {
        Value::Table(m) if m.contains_key("extra").unwrap_or(false) => {
            to_json(expect, 0).map_or_else(|e| e, |j| j.to_string())
        }
        Value::Table(m) => match (string(m, "contains")?, string(m, "matches")?) {
            (Some(c), _) => format!("text containing {c:?}"),
            (_, Some(r)) => format!("text matching {r:?}"),
            _ => "a string".into(),
        },
        Value::String(s) => format!("{:?}", s.to_string_lossy()),
        other => other
            .to_string()
            .unwrap_or_else(|_| other.type_name().into()),
    };
    Err(format!("expected {want}, got {}", answer.show()))
}

fn string(t: &Table, key: &str) -> Result<Option<String>, String> {
    match t.raw_get::<Value>(key).map_err(|e| e.to_string())? {
        Value::Nil => Ok(None),
        Value::String(s) => Ok(Some(s.to_string_lossy())),
        other => Err(format!(
            "`{key}` must be a string, not {}",
            other.type_name()
        )),
    }
}

fn table(t: &Table, key: &str) -> Result<Option<Table>, String> {
    match t.raw_get::<Value>(key).map_err(|e| e.to_string())? {
        Value::Nil => Ok(None),
        Value::Table(t) => Ok(Some(t)),
        other => Err(format!(
            "`{key}` must be a table, not {}",
            other.type_name()
        )),
    }
}
