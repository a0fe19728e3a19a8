//! The `on_notify(ctx)` hook: before a needs-a-human event of `[notify]` is sent
//! (`crate::notify`), the job's policy may let it go as it is, suppress it, or add fields to
//! the payload's `extra`. Rust decides what is an event and sends it; Lua decides whether this
//! one is worth a human's attention and what it should say.
//!
//! The hook is an observer with a say over one message, so it fails **open**: a notification
//! is how a human learns that something needs them, and a broken policy must never be the
//! reason they are not told. An error, a run past the budget or a bad answer sends the event as
//! it is, with a warning (`on_error.on_notify` may only be `"open"`).

use super::PolicyHost;
use super::calls::{bad, policy_setup, reason_of};
use super::error::PolicyError;
use super::lua_ctx::{describe, head};
use mlua::{Table, Value};
use serde_json::{Map, Number, Value as Json};

const HOOK: &str = "on_notify";
const EXPECTED: &str = "true or nil (send it as it is), false and an optional reason (suppress \
                        it), or a table { extra = { key = string|number|boolean, … } }";

/// At most this many fields in `extra`.
pub const MAX_EXTRA_FIELDS: usize = 32;
/// A key of `extra` is 1 to this many bytes of letters, digits, `_` and `-`.
pub const MAX_EXTRA_KEY: usize = 64;
/// A string value of `extra` is at most this many bytes.
pub const MAX_EXTRA_STRING: usize = 1024;

/// What `on_notify(ctx)` sees of one event: the payload a sink would get (read-only).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NotifyFacts {
    /// `approval_pending`, `intervention_required`, `agent_stalled` or `budget_80`.
    pub kind: String,
    /// The job's id.
    pub job: String,
    /// The task's first line.
    pub title: String,
    /// The job's state (`APPROVAL_REQUIRED`, …).
    pub state: String,
    /// Why, in words.
    pub reason: Option<String>,
    /// The job's page on the dashboard, when `notify.link-base` is set.
    pub link: Option<String>,
    /// When (ms since the epoch).
    pub at_ms: u64,
    /// When, RFC 3339.
    pub at: String,
    /// What caused it (`transition 4`, `session S iteration 2 worker`).
    pub cause: String,
}

/// The hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum NotifyDecision {
    /// Send the event, with these fields in the payload's `extra` (empty: as it is).
    Send {
        /// What the hook added.
        extra: Map<String, Json>,
    },
    /// Do not send it: the event is recorded suppressed, with the reason.
    Suppress {
        /// The hook's reason, when it gave one.
        reason: Option<String>,
    },
}

impl PolicyHost {
    /// Asks `on_notify(ctx)` about an event about to be sent; [`NotifyDecision::Send`] with
    /// nothing added when the policy has no such hook. A failure is a [`PolicyError`] the
    /// caller treats as open (send as is, warn).
    pub fn on_notify(&self, facts: &NotifyFacts) -> Result<NotifyDecision, PolicyError> {
        let send = NotifyDecision::Send { extra: Map::new() };
        let Some(policy) = self.lua.as_ref() else {
            return Ok(send);
        };
        let Some(f) = policy.parsed.on_notify.as_ref() else {
            return Ok(send);
        };
        let ctx = facts_table(&policy.lua, facts)
            .map_err(|e| policy_setup(HOOK, e, policy.memory_limit))?;
        let (answer, reason): (Value, Value) = policy.call(HOOK, f, ctx)?;
        match answer {
            Value::Nil | Value::Boolean(true) => Ok(send),
            Value::Boolean(false) => Ok(NotifyDecision::Suppress {
                reason: reason_of(HOOK, reason)?,
            }),
            Value::Table(t) => Ok(NotifyDecision::Send {
                extra: answer_table(&t)?,
            }),
            other => Err(bad(HOOK, &other, EXPECTED)),
        }
    }
}

/// The read-only `ctx`.
fn facts_table(lua: &mlua::Lua, facts: &NotifyFacts) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 9)?;
    t.raw_set("kind", facts.kind.as_str())?;
    t.raw_set("job", facts.job.as_str())?;
    t.raw_set("title", head(&facts.title))?;
    t.raw_set("state", facts.state.as_str())?;
    t.raw_set("reason", facts.reason.as_deref().map(head))?;
    t.raw_set("link", facts.link.as_deref())?;
    t.raw_set("at_ms", facts.at_ms)?;
    t.raw_set("at", facts.at.as_str())?;
    t.raw_set("cause", facts.cause.as_str())?;
    t.set_readonly(true);
    Ok(t)
}

/// `{ extra = { … } }`, checked key by key: nothing but `extra`, and in it only short names
/// with strings, finite numbers and booleans, within the size limits.
fn answer_table(t: &Table) -> Result<Map<String, Json>, PolicyError> {
    let mut extra = Map::new();
    for pair in t.pairs::<Value, Value>() {
        let (key, value) = pair.map_err(|e| runtime(e.to_string()))?;
        match &key {
            Value::String(s) if s.to_string_lossy() == "extra" => {}
            other => {
                let got = format!("a table with the key {}", describe(other));
                return Err(bad_got(got, "only the key `extra`"));
            }
        }
        let Value::Table(fields) = value else {
            return Err(bad_got(
                format!("extra = {}", describe(&value)),
                "extra = a table of string, number and boolean fields",
            ));
        };
        for pair in fields.pairs::<Value, Value>() {
            let (name, value) = pair.map_err(|e| runtime(e.to_string()))?;
            let name = field_name(&name)?;
            let value = field_value(&name, &value)?;
            extra.insert(name, value);
            if extra.len() > MAX_EXTRA_FIELDS {
                return Err(bad_got(
                    format!("more than {MAX_EXTRA_FIELDS} fields in extra"),
                    &format!("at most {MAX_EXTRA_FIELDS} fields"),
                ));
            }
        }
    }
    Ok(extra)
}

fn field_name(name: &Value) -> Result<String, PolicyError> {
    let ok = |s: &str| {
        !s.is_empty()
            && s.len() <= MAX_EXTRA_KEY
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    match name {
        Value::String(s) if ok(&s.to_string_lossy()) => Ok(s.to_string_lossy()),
        other => Err(bad_got(
            format!("extra key {}", describe(other)),
            &format!(
                "extra keys of 1 to {MAX_EXTRA_KEY} letters, digits, `_` or `-` (`ticket`, \
                 `on-call`)"
            ),
        )),
    }
}

fn field_value(name: &str, value: &Value) -> Result<Json, PolicyError> {
    let expected = || {
        format!(
            "extra.{name} a string of at most {MAX_EXTRA_STRING} bytes, a finite number or a \
             boolean"
        )
    };
    match value {
        Value::Boolean(b) => Ok(Json::Bool(*b)),
        Value::Integer(i) => Ok(Json::from(*i)),
        Value::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => Ok(Json::from(*n as i64)),
        Value::Number(n) => Number::from_f64(*n)
            .map(Json::Number)
            .ok_or_else(|| bad_got(format!("extra.{name} = {n}"), &expected())),
        Value::String(s) if s.as_bytes().len() <= MAX_EXTRA_STRING => {
            Ok(Json::String(s.to_string_lossy()))
        }
        Value::String(s) => Err(bad_got(
            format!("extra.{name} = a string of {} bytes", s.as_bytes().len()),
            &expected(),
        )),
        other => Err(bad_got(
            format!("extra.{name} = {}", describe(other)),
            &expected(),
        )),
    }
}

fn bad_got(got: String, expected: &str) -> PolicyError {
    PolicyError::BadReturn {
        hook: HOOK.to_string(),
        got,
        expected: expected.to_string(),
    }
}

fn runtime(message: String) -> PolicyError {
    PolicyError::Runtime {
        hook: HOOK.to_string(),
        message,
    }
}
