//! The read-only `oneshot` table: small, pure, bounded host helpers for policies.
//!
//! Every helper runs in Rust, where Luau's interrupt cannot stop it, so each one bounds its own
//! work instead: inputs longer than [`MAX_LUA_STRING`] are refused, regexes use the linear-time
//! `regex` crate with a compiled-size limit, JSON is capped in size and depth. Together with the
//! hook's wall-clock budget that keeps a hook call bounded whatever a policy passes in.

mod json;
mod matchers;
mod verdict;

use super::lua_ctx::{MAX_LUA_STRING, type_name};
use mlua::{Lua, LuaString, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// How many `oneshot.log` lines are kept between two [`LogBuffer::take`]s; more are counted
/// and reported as one warning, so a chatty loop cannot grow the host's memory.
const MAX_LOGS: usize = 256;

/// Longest `oneshot.log` message kept (longer ones are cut).
const MAX_LOG_MESSAGE: usize = 4096;

/// The `oneshot.log` lines a policy wrote since the engine last collected them.
#[derive(Default)]
pub(crate) struct LogBuffer {
    lines: RefCell<Vec<(String, String)>>,
    dropped: RefCell<usize>,
}

impl LogBuffer {
    fn push(&self, level: &str, message: String) {
        let mut lines = self.lines.borrow_mut();
        if lines.len() >= MAX_LOGS {
            *self.dropped.borrow_mut() += 1;
        } else {
            lines.push((level.to_string(), message));
        }
    }

    /// Drains the buffer: `(level, message)` in the order they were logged.
    pub(crate) fn take(&self) -> Vec<(String, String)> {
        let mut lines = std::mem::take(&mut *self.lines.borrow_mut());
        let dropped = std::mem::take(&mut *self.dropped.borrow_mut());
        if dropped > 0 {
            lines.push((
                "warn".to_string(),
                format!("{dropped} more policy log line(s) dropped (limit {MAX_LOGS})"),
            ));
        }
        lines
    }
}

/// A Lua error carrying the `file:line:` of the Lua code that called the running Rust
/// function, so helper and `require` errors point at the policy line that caused them.
pub(crate) fn located(lua: &Lua, message: String) -> mlua::Error {
    let place = lua
        .inspect_stack(1, |d| {
            let src = d.source().short_src.map(|s| s.into_owned());
            Some((src?, d.current_line()?))
        })
        .flatten();
    match place {
        Some((src, line)) => mlua::Error::runtime(format!("{src}:{line}: {message}")),
        None => mlua::Error::runtime(message),
    }
}

/// The string argument `what` of `helper`, refusing non-strings and oversized inputs.
fn arg(lua: &Lua, helper: &str, what: &str, value: &Value) -> mlua::Result<LuaString> {
    let Value::String(s) = value else {
        return Err(located(
            lua,
            format!(
                "oneshot.{helper}: {what} must be a string, not {}",
                type_name(value)
            ),
        ));
    };
    let len = s.as_bytes().len();
    if len > MAX_LUA_STRING {
        return Err(located(
            lua,
            format!("oneshot.{helper}: {what} is {len} bytes; the limit is {MAX_LUA_STRING}"),
        ));
    }
    Ok(s.clone())
}

/// Builds the `oneshot` table and sets it as a global (before the globals are frozen).
pub(crate) fn install(lua: &Lua, logs: Rc<LogBuffer>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.raw_set("log", log_fn(lua, logs)?)?;
    t.raw_set("duration", duration_fn(lua)?)?;
    let null = json::null_sentinel(lua)?;
    t.raw_set("null", &null)?;
    t.raw_set("json_decode", json::decode_fn(lua, null)?)?;
    t.raw_set("parse_verdict", verdict::parse_fn(lua)?)?;
    matchers::install(lua, &t)?;
    t.set_readonly(true);
    lua.globals().raw_set("oneshot", t)
}

fn log_fn(lua: &Lua, logs: Rc<LogBuffer>) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, (level, message): (Value, Value)| {
        let level = arg(lua, "log", "level", &level)?.to_string_lossy();
        let message = match &message {
            Value::String(s) => s.to_string_lossy(),
            Value::Nil | Value::Boolean(_) | Value::Integer(_) | Value::Number(_) => {
                message.to_string()?
            }
            other => {
                return Err(located(
                    lua,
                    format!(
                        "oneshot.log: the message must be a string, not {}",
                        type_name(other)
                    ),
                ));
            }
        };
        let message = cut(message, MAX_LOG_MESSAGE);
        match level.as_str() {
            "debug" => tracing::debug!(target: "oneshot::policy", "{message}"),
            "info" => tracing::info!(target: "oneshot::policy", "{message}"),
            "warn" => tracing::warn!(target: "oneshot::policy", "{message}"),
            "error" => tracing::error!(target: "oneshot::policy", "{message}"),
            other => {
                return Err(located(
                    lua,
                    format!(
                        "oneshot.log: unknown level {other:?}; use \"debug\", \"info\", \"warn\" \
                         or \"error\""
                    ),
                ));
            }
        }
        logs.push(&level, message);
        Ok(())
    })
}

fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut at = max;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        s.truncate(at);
    }
    s
}

/// `oneshot.duration("90s")` → 90.0; numbers are seconds already.
fn duration_fn(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, value: Value| {
        let bad = |why: String| located(lua, format!("oneshot.duration: {why}"));
        match &value {
            Value::Integer(i) if *i >= 0 => Ok(*i as f64),
            Value::Number(n) if n.is_finite() && *n >= 0.0 => Ok(*n),
            Value::Integer(_) | Value::Number(_) => Err(bad(format!(
                "{} is not a non-negative number of seconds",
                value.to_string()?
            ))),
            Value::String(_) => {
                let text = arg(lua, "duration", "the duration", &value)?.to_string_lossy();
                humantime::parse_duration(text.trim())
                    .map(|d| d.as_secs_f64())
                    .map_err(|e| {
                        bad(format!(
                            "{text:?} is not a duration ({e}); try \"90s\" or \"5m\""
                        ))
                    })
            }
            other => Err(bad(format!(
                "expected seconds or a string like \"5m\", not {}",
                type_name(other)
            ))),
        }
    })
}
