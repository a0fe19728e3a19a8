//! `HookCtx` → the Lua `ctx` table, cheaply.
//!
//! Guards run before every transition, so handing a hook its `ctx` must cost well under a
//! microsecond even when the worker's and auditor's outputs changed since the last call.
//!
//! One read-only table is kept per Lua state and patched between calls:
//!
//! * Small fields (`iteration`, `state`, `elapsed`, `exit_code`, …) are stored in the table,
//!   and only the ones that changed are written again.
//! * The large fields ([`LAZY_FIELDS`]: the outputs, prompt, task, critique, changed-file
//!   list, the auditor's structured answer and a panel's diff) are kept on the Rust side and built into Lua values only when a hook first reads
//!   them: the table's metatable has an `__index` that builds the value (with the same
//!   [`MAX_LUA_STRING`] cut as before) and caches it in the table, so later reads, in this call
//!   or a later one, are plain table reads until the field changes. Most hooks never read the
//!   outputs, so most calls never copy them into Lua. Building happens inside the hook call,
//!   under its time budget and the state's memory limit.
//! * `pairs(ctx)` and `for k, v in ctx do` build every field first, so iteration sees all of
//!   them. `next(ctx)` and `rawget(ctx, k)` see only fields already read (a documented
//!   difference from a plain table).
//!
//! The table (and its metatable, hidden behind `__metatable`) is read-only to hooks, so a hook
//! cannot corrupt what the next hook sees.

use super::HookCtx;
use super::ctx_lists::{check_list, egress_list, message_list};
use crate::machine::{SessionState, Verdict};
use mlua::{Function, Lua, LuaString, Table, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// Strings longer than this are cut before Lua sees them, so a C function such as `string.find`
/// cannot spend long on one huge argument.
pub const MAX_LUA_STRING: usize = 256 * 1024;

/// Registry key of the weak table mapping lazily filled tables to their fill-everything
/// function; the sandbox's `pairs` consults it (see `sandbox.rs`).
pub(crate) const LAZY_REGISTRY: &str = "oneshot.lazy_tables";

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

/// The `ctx` fields built only when a hook reads them.
pub const LAZY_FIELDS: [&str; 11] = [
    "task",
    "worker_prompt",
    "worker_output",
    "auditor_output",
    "critique",
    "changed_files",
    "structured",
    "diff",
    "checks",
    "messages",
    "egress",
];

/// One of [`LAZY_FIELDS`].
#[derive(Clone, Copy)]
enum Lazy {
    Task,
    WorkerPrompt,
    WorkerOutput,
    AuditorOutput,
    Critique,
    ChangedFiles,
    Structured,
    Diff,
    Checks,
    Messages,
    Egress,
}

impl Lazy {
    const ALL: [Lazy; 11] = [
        Lazy::Task,
        Lazy::WorkerPrompt,
        Lazy::WorkerOutput,
        Lazy::AuditorOutput,
        Lazy::Critique,
        Lazy::ChangedFiles,
        Lazy::Structured,
        Lazy::Diff,
        Lazy::Checks,
        Lazy::Messages,
        Lazy::Egress,
    ];

    fn name(self) -> &'static str {
        LAZY_FIELDS[self as usize]
    }

    fn from_name(name: &[u8]) -> Option<Lazy> {
        Lazy::ALL.into_iter().find(|f| f.name().as_bytes() == name)
    }

    /// The field's Lua value, cut to `MAX_LUA_STRING` like every string Lua is given.
    fn build(self, lua: &Lua, ctx: &HookCtx) -> mlua::Result<Value> {
        let string = |s: &str| lua.create_string(s).map(Value::String);
        match self {
            Lazy::Task => string(head(&ctx.task)),
            Lazy::WorkerPrompt => string(head(&ctx.worker_prompt)),
            Lazy::WorkerOutput => string(tail(&ctx.worker_output)),
            Lazy::AuditorOutput => string(tail(&ctx.auditor_output)),
            Lazy::Critique => match &ctx.critique {
                Some(c) => string(tail(c)),
                None => Ok(Value::Nil),
            },
            Lazy::ChangedFiles => string_list(lua, &ctx.changed_files).map(Value::Table),
            // Validated against the verdict schema, so shallow; a failure to convert is the
            // hook's error like any other.
            Lazy::Structured => match &ctx.structured {
                Some(v) => super::permit::json_value(lua, v),
                None => Ok(Value::Nil),
            },
            Lazy::Diff => match &ctx.diff {
                Some(d) => string(head(d)),
                None => Ok(Value::Nil),
            },
            Lazy::Checks => check_list(lua, &ctx.checks).map(Value::Table),
            Lazy::Messages => message_list(lua, &ctx.messages).map(Value::Table),
            Lazy::Egress => egress_list(lua, &ctx.egress).map(Value::Table),
        }
    }
}

/// Interned names of the fields stored in the table.
struct Keys {
    session_id: LuaString,
    state: LuaString,
    iteration: LuaString,
    max_iterations: LuaString,
    exit_code: LuaString,
    reason: LuaString,
    elapsed: LuaString,
    verdict: LuaString,
    confidence: LuaString,
    open_criteria_streak: LuaString,
    workdir: LuaString,
    /// Indexed by `Lazy as usize`: cleared from the table when the field changes.
    lazy: [LuaString; LAZY_FIELDS.len()],
}

/// The reusable `ctx` table and what it currently holds.
pub(crate) struct CtxTable {
    table: Table,
    keys: Keys,
    states: Vec<LuaString>,
    verdicts: [LuaString; 3],
    /// Shared with the metatable's functions.
    current: Rc<RefCell<Current>>,
    /// Whether `table` has been filled once.
    filled: bool,
}

/// The context of the current (or last) call, as the metatable's functions see it.
#[derive(Default)]
struct Current {
    /// The eager fields as the table holds them, and the lazy fields `__index` builds from.
    ctx: HookCtx,
    /// Which lazy fields the table holds a built value for, by `Lazy as usize`.
    cached: [bool; LAZY_FIELDS.len()],
}

/// Stores `value` under `key` in the read-only `table`.
fn cache(table: &Table, key: impl mlua::IntoLua, value: &Value) -> mlua::Result<()> {
    table.set_readonly(false);
    let result = table.raw_set(key, value);
    table.set_readonly(true);
    result
}

/// Builds `field` from `current`, stores it in `table` (unless nil) and returns it.
fn build_and_cache(
    lua: &Lua,
    table: &Table,
    key: impl mlua::IntoLua,
    field: Lazy,
    current: &RefCell<Current>,
) -> mlua::Result<Value> {
    let value = field.build(lua, &current.borrow().ctx)?;
    if !value.is_nil() {
        cache(table, key, &value)?;
        current.borrow_mut().cached[field as usize] = true;
    }
    Ok(value)
}

impl CtxTable {
    pub(crate) fn new(lua: &Lua) -> mlua::Result<CtxTable> {
        let s = |name: &str| lua.create_string(name);
        let keys = Keys {
            session_id: s("session_id")?,
            state: s("state")?,
            iteration: s("iteration")?,
            max_iterations: s("max_iterations")?,
            exit_code: s("exit_code")?,
            reason: s("reason")?,
            elapsed: s("elapsed")?,
            verdict: s("verdict")?,
            confidence: s("confidence")?,
            open_criteria_streak: s("open_criteria_streak")?,
            workdir: s("workdir")?,
            lazy: [
                s(LAZY_FIELDS[0])?,
                s(LAZY_FIELDS[1])?,
                s(LAZY_FIELDS[2])?,
                s(LAZY_FIELDS[3])?,
                s(LAZY_FIELDS[4])?,
                s(LAZY_FIELDS[5])?,
                s(LAZY_FIELDS[6])?,
                s(LAZY_FIELDS[7])?,
                s(LAZY_FIELDS[8])?,
                s(LAZY_FIELDS[9])?,
                s(LAZY_FIELDS[10])?,
            ],
        };
        let states = SessionState::ALL
            .iter()
            .map(|st| s(st.as_str()))
            .collect::<mlua::Result<_>>()?;
        let current = Rc::new(RefCell::new(Current::default()));
        let table = lua.create_table_with_capacity(0, 16)?;

        // `ctx.worker_output` etc.: build, cache, return. Any other missing key reads as nil.
        let index = {
            let current = Rc::clone(&current);
            lua.create_function(move |lua, (t, key): (Table, Value)| {
                let Value::String(key) = key else {
                    return Ok(Value::Nil);
                };
                let Some(field) = Lazy::from_name(&key.as_bytes()) else {
                    return Ok(Value::Nil);
                };
                build_and_cache(lua, &t, key, field, &current)
            })?
        };
        let fill = {
            let current = Rc::clone(&current);
            lua.create_function(move |lua, t: Table| {
                for field in Lazy::ALL {
                    if !current.borrow().cached[field as usize] {
                        build_and_cache(lua, &t, field.name(), field, &current)?;
                    }
                }
                Ok(())
            })?
        };
        // Luau's generalized iteration (`for k, v in ctx do`). A Lua closure, so no Rust
        // closure holds a reference into the state.
        let iter: Function = lua
            .load("local fill, next = ... return function(t) fill(t) return next, t end")
            .set_name("=oneshot-ctx")
            .call((&fill, lua.globals().get::<Function>("next")?))?;
        let meta = lua.create_table_with_capacity(0, 3)?;
        meta.raw_set("__index", index)?;
        meta.raw_set("__iter", iter)?;
        meta.raw_set("__metatable", false)?;
        meta.set_readonly(true);
        table.set_metatable(Some(meta))?;
        table.set_readonly(true);
        // `pairs(ctx)`.
        let lazy_tables: Table = lua.named_registry_value(LAZY_REGISTRY)?;
        lazy_tables.raw_set(&table, fill)?;

        Ok(CtxTable {
            table,
            keys,
            states,
            verdicts: [s("done")?, s("retry")?, s("impossible")?],
            current,
            filled: false,
        })
    }

    /// The table for `ctx`, patched in place.
    pub(crate) fn fill(&mut self, ctx: &HookCtx) -> mlua::Result<Table> {
        self.table.set_readonly(false);
        let result = self.patch(ctx);
        self.table.set_readonly(true);
        result?;
        self.filled = true;
        Ok(self.table.clone())
    }

    fn patch(&self, ctx: &HookCtx) -> mlua::Result<()> {
        let t = &self.table;
        let k = &self.keys;
        let fresh = !self.filled;
        let mut current = self.current.borrow_mut();
        let Current { ctx: cur, cached } = &mut *current;
        // Write a field when it changed (or on the first fill), then remember the new value.
        macro_rules! field {
            ($name:ident, $value:expr) => {
                if fresh || cur.$name != ctx.$name {
                    t.raw_set(&k.$name, $value)?;
                    cur.$name.clone_from(&ctx.$name);
                }
            };
        }
        // A lazy field: keep the new value for `__index`. If the table holds a value built
        // from the old one, drop it when it changed; if not, copying is cheaper than comparing.
        macro_rules! lazy {
            ($name:ident, $field:expr) => {
                let i = $field as usize;
                if !cached[i] {
                    cur.$name.clone_from(&ctx.$name);
                } else if cur.$name != ctx.$name {
                    t.raw_set(&k.lazy[i], Value::Nil)?;
                    cached[i] = false;
                    cur.$name.clone_from(&ctx.$name);
                }
            };
        }
        field!(session_id, head(&ctx.session_id));
        field!(state, ctx.state.map(|s| self.states[s as usize].clone()));
        field!(iteration, ctx.iteration);
        field!(max_iterations, ctx.max_iterations);
        field!(exit_code, ctx.exit_code);
        field!(reason, ctx.reason.as_deref().map(head));
        field!(elapsed, ctx.elapsed);
        field!(
            verdict,
            ctx.verdict.map(|v| self.verdicts[verdict_index(v)].clone())
        );
        field!(confidence, ctx.confidence);
        field!(open_criteria_streak, ctx.open_criteria_streak);
        field!(workdir, head(&ctx.workdir));
        lazy!(task, Lazy::Task);
        lazy!(worker_prompt, Lazy::WorkerPrompt);
        lazy!(worker_output, Lazy::WorkerOutput);
        lazy!(auditor_output, Lazy::AuditorOutput);
        lazy!(critique, Lazy::Critique);
        lazy!(changed_files, Lazy::ChangedFiles);
        lazy!(structured, Lazy::Structured);
        lazy!(diff, Lazy::Diff);
        lazy!(checks, Lazy::Checks);
        lazy!(messages, Lazy::Messages);
        lazy!(egress, Lazy::Egress);
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
