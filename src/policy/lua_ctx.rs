//! `HookCtx` → the Lua `ctx` table, cheaply.
//!
//! Guards run before every transition, so converting `ctx` must cost well under a microsecond.
//! Field-name strings are interned once, and one read-only table is kept and patched: only the
//! fields that changed since the previous call are written, and unchanged strings (4 KiB
//! outputs, the changed-file list) are not copied into Lua again. The table is read-only to
//! hooks, so a hook cannot corrupt what the next hook sees.

use super::HookCtx;
use crate::machine::{SessionState, Verdict};
use mlua::{Lua, LuaString, Table, Value};

/// Strings longer than this are cut before Lua sees them, so a C function such as `string.find`
/// cannot spend long on one huge argument.
pub const MAX_LUA_STRING: usize = 256 * 1024;

/// The last `MAX_LUA_STRING` bytes of `s`, cut at a character boundary.
pub(crate) fn tail(s: &str) -> &str {
    if s.len() <= MAX_LUA_STRING {
        return s;
    }
    let mut at = s.len() - MAX_LUA_STRING;
    while !s.is_char_boundary(at) {
        at += 1;
    }
    &s[at..]
}

/// The first `MAX_LUA_STRING` bytes of `s`, cut at a character boundary (for the task and
/// prompt, whose beginning matters most).
pub(crate) fn head(s: &str) -> &str {
    if s.len() <= MAX_LUA_STRING {
        return s;
    }
    let mut at = MAX_LUA_STRING;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[..at]
}

/// Interned field names, one per `HookCtx` field.
struct Keys {
    session_id: LuaString,
    state: LuaString,
    iteration: LuaString,
    max_iterations: LuaString,
    task: LuaString,
    worker_prompt: LuaString,
    exit_code: LuaString,
    reason: LuaString,
    elapsed: LuaString,
    worker_output: LuaString,
    auditor_output: LuaString,
    verdict: LuaString,
    critique: LuaString,
    confidence: LuaString,
    changed_files: LuaString,
    workdir: LuaString,
}

/// The reusable `ctx` table and what it currently holds.
pub(crate) struct CtxTable {
    table: Table,
    keys: Keys,
    states: Vec<LuaString>,
    verdicts: [LuaString; 3],
    /// What `table` holds; `None` until the first fill.
    last: Option<HookCtx>,
}

impl CtxTable {
    pub(crate) fn new(lua: &Lua) -> mlua::Result<CtxTable> {
        let s = |name: &str| lua.create_string(name);
        let keys = Keys {
            session_id: s("session_id")?,
            state: s("state")?,
            iteration: s("iteration")?,
            max_iterations: s("max_iterations")?,
            task: s("task")?,
            worker_prompt: s("worker_prompt")?,
            exit_code: s("exit_code")?,
            reason: s("reason")?,
            elapsed: s("elapsed")?,
            worker_output: s("worker_output")?,
            auditor_output: s("auditor_output")?,
            verdict: s("verdict")?,
            critique: s("critique")?,
            confidence: s("confidence")?,
            changed_files: s("changed_files")?,
            workdir: s("workdir")?,
        };
        let states = SessionState::ALL
            .iter()
            .map(|st| s(st.as_str()))
            .collect::<mlua::Result<_>>()?;
        Ok(CtxTable {
            table: lua.create_table_with_capacity(0, 16)?,
            keys,
            states,
            verdicts: [s("done")?, s("retry")?, s("impossible")?],
            last: None,
        })
    }

    /// The table for `ctx`, patched in place.
    pub(crate) fn fill(&mut self, lua: &Lua, ctx: &HookCtx) -> mlua::Result<Table> {
        let t = &self.table;
        t.set_readonly(false);
        let result = self.patch(lua, ctx);
        self.table.set_readonly(true);
        result?;
        Ok(self.table.clone())
    }

    fn patch(&mut self, lua: &Lua, ctx: &HookCtx) -> mlua::Result<()> {
        let t = &self.table;
        let k = &self.keys;
        let fresh = self.last.is_none();
        let last = self.last.get_or_insert_with(HookCtx::default);
        // Write a field when it changed (or on the first fill), then remember the new value.
        macro_rules! field {
            ($name:ident, $value:expr) => {
                if fresh || last.$name != ctx.$name {
                    t.raw_set(&k.$name, $value)?;
                    last.$name.clone_from(&ctx.$name);
                }
            };
        }
        field!(session_id, head(&ctx.session_id));
        field!(state, ctx.state.map(|s| self.states[s as usize].clone()));
        field!(iteration, ctx.iteration);
        field!(max_iterations, ctx.max_iterations);
        field!(task, lua.create_string(head(&ctx.task))?);
        field!(worker_prompt, lua.create_string(head(&ctx.worker_prompt))?);
        field!(exit_code, ctx.exit_code);
        field!(reason, ctx.reason.as_deref().map(head));
        field!(elapsed, ctx.elapsed);
        field!(worker_output, lua.create_string(tail(&ctx.worker_output))?);
        field!(
            auditor_output,
            lua.create_string(tail(&ctx.auditor_output))?
        );
        field!(
            verdict,
            ctx.verdict.map(|v| self.verdicts[verdict_index(v)].clone())
        );
        field!(critique, ctx.critique.as_deref().map(tail));
        field!(confidence, ctx.confidence);
        field!(changed_files, string_list(lua, &ctx.changed_files)?);
        field!(workdir, head(&ctx.workdir));
        Ok(())
    }
}

fn verdict_index(v: Verdict) -> usize {
    match v {
        Verdict::Done => 0,
        Verdict::Retry => 1,
        Verdict::Impossible => 2,
    }
}

/// A read-only Lua list of strings.
pub(crate) fn string_list(lua: &Lua, items: &[String]) -> mlua::Result<Table> {
    let list = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        list.raw_set(i + 1, head(item))?;
    }
    list.set_readonly(true);
    Ok(list)
}

/// Converts a value for error messages: `a number`, `nil`, `"maybe"`.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Nil => "nil".to_string(),
        Value::String(s) => {
            let text = s.to_string_lossy();
            let short: String = text.chars().take(40).collect();
            format!("\"{short}\"")
        }
        Value::Boolean(b) => format!("{b}"),
        other => {
            let name = type_name(other);
            let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            format!("{article} {name}")
        }
    }
}

/// Lua's name for a value's type; mlua reports whole numbers as `integer`, which Lua users
/// know as `number`.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Integer(_) => "number",
        other => other.type_name(),
    }
}
