//! The `ctx` fields that are lists of records (`ctx.checks`, `ctx.messages`, `ctx.egress`),
//! built into read-only Lua tables when a hook first reads them (see `lua_ctx.rs`).

use super::lua_ctx::{head, tail};
use mlua::{Lua, Table};

/// `ctx.checks`: a read-only list of read-only tables, one per check that ran, in order
/// (`name`, `run`, `passed`, `exit_code`, `signal`, `stopped`, `duration_ms`, `output`).
pub(super) fn check_list(lua: &Lua, checks: &[crate::check::CheckResult]) -> mlua::Result<Table> {
    let list = lua.create_table_with_capacity(checks.len(), 0)?;
    for (i, c) in checks.iter().enumerate() {
        let t = lua.create_table_with_capacity(0, 8)?;
        t.raw_set("name", head(&c.name))?;
        t.raw_set("run", head(&c.run))?;
        t.raw_set("passed", c.passed())?;
        t.raw_set("exit_code", c.exit_code)?;
        t.raw_set("signal", c.signal)?;
        t.raw_set("stopped", c.stopped.as_deref().map(head))?;
        t.raw_set("duration_ms", c.duration_ms)?;
        t.raw_set("output", tail(&c.tail))?;
        t.set_readonly(true);
        list.raw_set(i + 1, t)?;
    }
    list.set_readonly(true);
    Ok(list)
}

/// `ctx.messages`: a read-only list of read-only tables, one per message said to the worker,
/// oldest first (`id`, `actor`, `text`, `ts`, `now`, `status`, `taken_iteration`).
pub(super) fn message_list(lua: &Lua, messages: &[crate::session::Said]) -> mlua::Result<Table> {
    let list = lua.create_table_with_capacity(messages.len(), 0)?;
    for (i, m) in messages.iter().enumerate() {
        let t = lua.create_table_with_capacity(0, 7)?;
        t.raw_set("id", head(&m.id))?;
        t.raw_set("actor", head(&m.actor))?;
        t.raw_set("text", head(&m.text))?;
        t.raw_set("ts", m.ts)?;
        t.raw_set("now", m.now)?;
        t.raw_set("status", m.status.as_str())?;
        t.raw_set("taken_iteration", m.taken_iteration)?;
        t.set_readonly(true);
        list.raw_set(i + 1, t)?;
    }
    list.set_readonly(true);
    Ok(list)
}

/// `ctx.egress`: a read-only list of read-only tables, one per connection the egress proxy
/// refused, oldest first (`host`, `port`, `agent`, `role`, `rule`, `address`, `hint`, `ts`).
pub(super) fn egress_list(
    lua: &Lua,
    refusals: &[crate::session::record::EgressRefusal],
) -> mlua::Result<Table> {
    let list = lua.create_table_with_capacity(refusals.len(), 0)?;
    for (i, r) in refusals.iter().enumerate() {
        let t = lua.create_table_with_capacity(0, 8)?;
        t.raw_set("host", head(&r.host))?;
        t.raw_set("port", r.port)?;
        t.raw_set("agent", head(&r.agent))?;
        t.raw_set("role", r.role.as_str())?;
        t.raw_set("rule", head(&r.rule))?;
        t.raw_set("address", r.address.as_deref().map(head))?;
        t.raw_set("hint", head(&r.hint))?;
        t.raw_set("ts", r.ts)?;
        t.set_readonly(true);
        list.raw_set(i + 1, t)?;
    }
    list.set_readonly(true);
    Ok(list)
}
