//! The `permit(tool, input, ctx, role)` hook: every tool-permission request an agent's protocol
//! exposes (Claude Code's `can_use_tool`, Codex approval requests, ACP permission requests).
//!
//! It fails closed and that cannot be changed: a permission hook that errors, runs out of time
//! or answers nonsense must never let a tool run, so every failure becomes a deny whose reason
//! names the error and its `file:line`.

use super::calls::{bad, policy_setup, reason_of};
use super::decision::{PermitDecision, default_permit};
use super::error::PolicyError;
use super::host::LuaPolicy;
use super::lua_ctx::head;
use super::{HookCtx, PolicyHost};
use crate::process::Role;
use mlua::{Lua, Table, Value};

/// The hook's name in errors, `on_error` and decision records.
pub(super) const PERMIT_HOOK: &str = "permit";

/// Tool inputs nested deeper than this are not converted: the request is denied (a hook cannot
/// judge what it cannot see, and depth is how hostile input would exhaust the stack).
pub const MAX_INPUT_DEPTH: usize = 64;

const PERMIT_EXPECTED: &str = "\"allow\" or \"deny\" (or true/false), optionally and a reason";

impl PolicyHost {
    /// Answers a tool-permission request from the agent running as `role`: the `permit` hook,
    /// or the built-in rule when the policy has none. `tool` is the tool's name (`"Bash"`,
    /// `"Write"`, `"command_execution"`), `input` its input as the agent sent it.
    ///
    /// Fails closed: when the hook fails (error, budget, memory, bad return value) the answer
    /// is `Ok` with a deny whose reason names the error and its `file:line`
    /// ([`PolicyHost::permit_failure`]); use [`PolicyHost::try_permit`] to see the error itself
    /// (to record its kind). No `Err` is returned today; the `Result` leaves room for failures
    /// that are not the hook's, which a caller must treat as a deny too.
    pub fn permit(
        &self,
        role: Role,
        tool: &str,
        input: &serde_json::Value,
        ctx: &HookCtx,
    ) -> Result<PermitDecision, PolicyError> {
        Ok(self
            .try_permit(role, tool, input, ctx)
            .unwrap_or_else(|e| self.permit_failure(&e)))
    }

    /// [`PolicyHost::permit`] without the fail-closed mapping: `Err` when the hook failed. The
    /// caller must then deny ([`PolicyHost::permit_failure`] builds that answer).
    pub fn try_permit(
        &self,
        role: Role,
        tool: &str,
        input: &serde_json::Value,
        ctx: &HookCtx,
    ) -> Result<PermitDecision, PolicyError> {
        let Some((policy, f)) = self
            .lua
            .as_ref()
            .and_then(|p| p.parsed.permit.as_ref().map(|f| (p, f)))
        else {
            return Ok(default_permit(role, tool));
        };
        let hook = PERMIT_HOOK;
        let setup = |e| policy_setup(hook, e, policy.memory_limit);
        let ctx = policy.ctx_table(hook, ctx)?;
        let tool_name = policy.lua.create_string(head(tool)).map_err(setup)?;
        let input = input_value(&policy.lua, input, hook, policy)?;
        let (answer, reason): (Value, Value) =
            policy.call(hook, f, (tool_name, input, ctx, role.as_str()))?;
        let allow = match &answer {
            Value::Boolean(b) => Some(*b),
            Value::String(s) => match s.to_string_lossy().trim().to_ascii_lowercase().as_str() {
                "allow" => Some(true),
                "deny" => Some(false),
                _ => None,
            },
            _ => None,
        }
        .ok_or_else(|| bad(hook, &answer, PERMIT_EXPECTED))?;
        Ok(PermitDecision {
            allow,
            reason: reason_of(hook, reason)?,
        })
    }

    /// The deny that stands for a failed `permit` hook: its reason names the error and where
    /// it happened (the error's own `file:line`, else the line the hook is defined on).
    pub fn permit_failure(&self, err: &PolicyError) -> PermitDecision {
        let site = err
            .location()
            .or_else(|| self.hook_site(PERMIT_HOOK))
            .map(|s| format!(" at {s}"))
            .unwrap_or_default();
        PermitDecision::deny(format!(
            "denied because the permit policy failed{site}: {err}"
        ))
    }
}

/// The tool input as a Lua value (see [`json_to_lua`]); errors are the hook's failures.
fn input_value(
    lua: &Lua,
    input: &serde_json::Value,
    hook: &str,
    policy: &LuaPolicy,
) -> Result<Value, PolicyError> {
    match json_to_lua(lua, input, 1) {
        Ok(v) => Ok(v),
        Err(Convert::Deep) => Err(PolicyError::Runtime {
            hook: hook.to_string(),
            message: format!("the tool input nests deeper than {MAX_INPUT_DEPTH} levels"),
        }),
        Err(Convert::Lua(e)) => Err(policy_setup(hook, e, policy.memory_limit)),
    }
}

/// A JSON value as Lua (read-only tables), for `ctx` fields; too deep a value is a Lua error.
pub(super) fn json_value(lua: &Lua, v: &serde_json::Value) -> mlua::Result<Value> {
    match json_to_lua(lua, v, 1) {
        Ok(v) => Ok(v),
        Err(Convert::Lua(e)) => Err(e),
        Err(Convert::Deep) => Err(mlua::Error::runtime(format!(
            "the value nests deeper than {MAX_INPUT_DEPTH} levels"
        ))),
    }
}

/// Why a tool input could not be converted.
enum Convert {
    /// Deeper than [`MAX_INPUT_DEPTH`].
    Deep,
    /// Lua could not allocate.
    Lua(mlua::Error),
}

impl From<mlua::Error> for Convert {
    fn from(e: mlua::Error) -> Self {
        Convert::Lua(e)
    }
}

/// JSON → Lua: objects become tables, arrays sequences, `null` nil; strings are cut like every
/// other string a hook gets ([`super::MAX_LUA_STRING`]); tables are read-only, like `ctx`, so
/// one call cannot leave anything behind for the next.
fn json_to_lua(lua: &Lua, v: &serde_json::Value, depth: usize) -> Result<Value, Convert> {
    use serde_json::Value as J;
    let frozen = |t: Table| {
        t.set_readonly(true);
        Value::Table(t)
    };
    Ok(match v {
        J::Null => Value::Nil,
        J::Bool(b) => Value::Boolean(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => Value::String(lua.create_string(head(s))?),
        J::Array(_) | J::Object(_) if depth > MAX_INPUT_DEPTH => return Err(Convert::Deep),
        J::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, json_to_lua(lua, item, depth + 1)?)?;
            }
            frozen(t)
        }
        J::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, item) in map {
                t.raw_set(head(k), json_to_lua(lua, item, depth + 1)?)?;
            }
            frozen(t)
        }
    })
}
