//! The policy's `checks`: the commands an audit runs before its auditor — a list fixed when the
//! policy loads, or a hook that returns one from `ctx` (checks that depend on what changed).
//!
//! ```lua
//! checks = { "cargo test", { name = "lint", run = "cargo clippy", timeout = 120 } }
//! checks = function(ctx) return { "npm test" } end
//! ```

use super::HookCtx;
use super::PolicyHost;
use super::calls::bad;
use super::error::PolicyError;
use super::lua_ctx::type_name;
use super::schema::SchemaError;
use crate::check::Check;
use mlua::{Function, Table, Value};

/// What the policy's `checks` key holds.
pub(crate) enum PolicyChecks {
    /// A list, read when the policy loaded.
    List(Vec<Check>),
    /// `checks(ctx)`, asked at each audit.
    Hook(Function),
}

/// What a `checks` entry (or the hook's answer) must be.
const EXPECTED: &str =
    "a list of commands: strings, or tables { name = ..., run = ..., timeout = seconds }";

/// Reads the `checks` key.
pub(crate) fn parse(value: Value) -> Result<PolicyChecks, SchemaError> {
    match value {
        Value::Function(f) => Ok(PolicyChecks::Hook(f)),
        Value::Table(t) => list(&t)
            .map(PolicyChecks::List)
            .map_err(|m| SchemaError::keyed("checks", m)),
        other => Err(SchemaError::keyed(
            "checks",
            format!(
                "`checks` must be {EXPECTED}, or a function returning one; not {}",
                type_name(&other)
            ),
        )),
    }
}

/// A list of checks from a Lua table; the error says which entry is wrong and how.
fn list(t: &Table) -> Result<Vec<Check>, String> {
    let mut out = Vec::new();
    let len = t.raw_len();
    if t.pairs::<Value, Value>().count() != len {
        return Err(format!("`checks` must be {EXPECTED} (no named keys)"));
    }
    for (i, v) in t.sequence_values::<Value>().enumerate() {
        let v = v.map_err(|e| e.to_string())?;
        out.push(entry(i + 1, v)?);
    }
    Ok(out)
}

fn entry(n: usize, v: Value) -> Result<Check, String> {
    let bad = |what: String| format!("checks[{n}] {what}");
    match v {
        Value::String(s) => {
            let run = s.to_string_lossy();
            if run.trim().is_empty() {
                return Err(bad("is an empty command".into()));
            }
            Ok(Check::command(&run))
        }
        Value::Table(t) => {
            let mut check = Check::command("");
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair.map_err(|e| e.to_string())?;
                let key = match &k {
                    Value::String(s) => s.to_string_lossy(),
                    other => return Err(bad(format!("has a {} key", type_name(other)))),
                };
                match (key.as_str(), v) {
                    ("run", Value::String(s)) => check.run = s.to_string_lossy().trim().into(),
                    ("name", Value::String(s)) => check.name = s.to_string_lossy().trim().into(),
                    ("timeout", Value::Integer(i)) if i > 0 => check.timeout_secs = Some(i as u64),
                    ("timeout", Value::Number(f)) if f >= 1.0 => {
                        check.timeout_secs = Some(f as u64);
                    }
                    ("run" | "name", other) => {
                        return Err(bad(format!(
                            "`{key}` must be a string, not {}",
                            type_name(&other)
                        )));
                    }
                    ("timeout", other) => {
                        return Err(bad(format!(
                            "`timeout` must be a whole number of seconds (at least 1), not {}",
                            super::lua_ctx::describe(&other)
                        )));
                    }
                    (other, _) => {
                        let hint = super::schema::suggest(other, &["name", "run", "timeout"])
                            .map(|s| format!("; did you mean `{s}`?"))
                            .unwrap_or_default();
                        return Err(bad(format!("has an unknown key `{other}`{hint}")));
                    }
                }
            }
            if check.run.is_empty() {
                return Err(bad("has no `run` command".into()));
            }
            if check.name.is_empty() {
                check.name.clone_from(&check.run);
            }
            Ok(check)
        }
        other => Err(bad(format!(
            "must be a string or a table, not {}",
            type_name(&other)
        ))),
    }
}

impl PolicyHost {
    /// The checks an audit runs before its auditor: the policy's list, or its `checks` hook's
    /// answer for `ctx` (none when the policy has no `checks`).
    pub fn checks(&self, ctx: &HookCtx) -> Result<Vec<Check>, PolicyError> {
        let Some(policy) = self.lua.as_ref() else {
            return Ok(Vec::new());
        };
        match &policy.parsed.checks {
            None => Ok(Vec::new()),
            Some(PolicyChecks::List(l)) => Ok(l.clone()),
            Some(PolicyChecks::Hook(f)) => {
                let hook = "checks";
                let ctx = policy.ctx_table(hook, ctx)?;
                match policy.call::<Value>(hook, f, ctx)? {
                    Value::Nil => Ok(Vec::new()),
                    Value::Table(t) => list(&t).map_err(|m| PolicyError::BadReturn {
                        hook: hook.to_string(),
                        got: m,
                        expected: EXPECTED.to_string(),
                    }),
                    other => Err(bad(hook, &other, EXPECTED)),
                }
            }
        }
    }

    /// Whether the policy has `checks` (a list or a hook).
    pub fn has_checks(&self) -> bool {
        self.lua.as_ref().is_some_and(|p| p.parsed.checks.is_some())
    }
}
