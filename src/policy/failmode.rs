//! What the engine does when a hook fails: the declared failure mode of each hook, and the
//! policy's `on_error` table that may change it.
//!
//! Decision hooks fail closed because there is no safe answer to invent: if `verdict` errors,
//! neither "done" nor "retry" is right, so the session stops with `policy_error`. An observer
//! (`on_transition`) decides nothing, so by default its failure is a warning. Guards may be
//! declared open: then a guard error allows the transition it was guarding, with a warning.
//! `permit` fails closed too, and its "closed" is a deny of the tool, not a failed session;
//! `egress` likewise refuses the connection.
//! `on_notify` is the one hook that is always open: its failure sends the notification as it
//! is, because a broken policy must never be why a human is not told something needs them.

use super::PolicyHost;
use super::lua_ctx::type_name;
use super::schema::{SchemaError, suggest};
use mlua::{Table, Value};
use serde::Serialize;

/// What a hook's failure (error, budget, memory cap, bad return value) leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailMode {
    /// The failure is a warning and the session goes on as if the hook were absent (for a
    /// guard: the transition is allowed).
    Open,
    /// The transition is refused and the session goes to its fallback with `policy_error`.
    Closed,
}

impl FailMode {
    /// `"open"` or `"closed"`, as written in `on_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailMode::Open => "open",
            FailMode::Closed => "closed",
        }
    }
}

/// The hook names [`PolicyHost::fail_mode`] and `on_error` know, in documentation order.
pub const FAIL_MODE_HOOKS: [&str; 11] = [
    "verdict",
    "salvage",
    "next_prompt",
    "audit_prompt",
    "checks",
    "approve",
    "permit",
    "egress",
    "guard",
    "on_transition",
    "on_notify",
];

/// The hooks that may be declared open.
const MAY_BE_OPEN: [&str; 3] = ["guard", "on_transition", "on_notify"];

/// The failure modes of one policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FailModes {
    guard: FailMode,
    on_transition: FailMode,
}

impl Default for FailModes {
    fn default() -> Self {
        FailModes {
            guard: FailMode::Closed,
            on_transition: FailMode::Open,
        }
    }
}

impl FailModes {
    /// The mode of `hook`: a name from [`FAIL_MODE_HOOKS`], or a guard's own name
    /// (`guards[A -> B]`, as [`super::PolicyError::hook`] reports it). Anything else, including
    /// the load itself, is closed.
    pub(crate) fn get(&self, hook: &str) -> FailMode {
        match hook {
            "on_transition" => self.on_transition,
            // Always open: see the module's comment.
            "on_notify" => FailMode::Open,
            "guard" => self.guard,
            h if h.starts_with("guards[") => self.guard,
            _ => FailMode::Closed,
        }
    }

    /// Every hook with its mode, in [`FAIL_MODE_HOOKS`] order.
    pub(crate) fn all(&self) -> Vec<(String, FailMode)> {
        FAIL_MODE_HOOKS
            .iter()
            .map(|h| (h.to_string(), self.get(h)))
            .collect()
    }

    /// Reads `on_error = { on_transition = "closed", guard = "open" }`.
    pub(crate) fn from_table(table: &Table) -> Result<FailModes, SchemaError> {
        let mut modes = FailModes::default();
        for pair in table.pairs::<Value, Value>() {
            let (key, value) = pair.map_err(|e| SchemaError::new(e.to_string()))?;
            let Value::String(key) = key else {
                return Err(SchemaError::keyed(
                    "on_error",
                    format!(
                        "on_error has a {} key; keys are hook names",
                        type_name(&key)
                    ),
                ));
            };
            let key = key.to_string_lossy();
            if !FAIL_MODE_HOOKS.contains(&key.as_str()) {
                return Err(SchemaError::unknown_key(
                    &key,
                    "on_error",
                    suggest(&key, &FAIL_MODE_HOOKS),
                ));
            }
            // "open" for permit would mean "allow the tool when the hook fails": never.
            if key == "permit"
                && !matches!(&value, Value::String(s) if s.to_string_lossy() == "closed")
            {
                return Err(SchemaError::keyed(
                    &key,
                    format!(
                        "on_error.permit cannot be {}: a permission request whose hook fails is \
                         always denied, never allowed (permit fails closed; only \"closed\" may \
                         be written)",
                        super::lua_ctx::describe(&value)
                    ),
                ));
            }
            // "open" for egress would mean "open the connection when the hook fails": never.
            if key == "egress"
                && !matches!(&value, Value::String(s) if s.to_string_lossy() == "closed")
            {
                return Err(SchemaError::keyed(
                    &key,
                    format!(
                        "on_error.egress cannot be {}: a connection whose hook fails is always \
                         refused, never opened (egress fails closed; only \"closed\" may be \
                         written)",
                        super::lua_ctx::describe(&value)
                    ),
                ));
            }
            // "closed" for on_notify would mean "tell nobody when the hook fails": never.
            if key == "on_notify"
                && !matches!(&value, Value::String(s) if s.to_string_lossy() == "open")
            {
                return Err(SchemaError::keyed(
                    &key,
                    format!(
                        "on_error.on_notify cannot be {}: a notification whose hook fails is \
                         always sent as it is, never dropped (on_notify fails open; only \
                         \"open\" may be written)",
                        super::lua_ctx::describe(&value)
                    ),
                ));
            }
            let mode = match &value {
                Value::String(s) if s.to_string_lossy() == "open" => FailMode::Open,
                Value::String(s) if s.to_string_lossy() == "closed" => FailMode::Closed,
                other => {
                    return Err(SchemaError::keyed(
                        &key,
                        format!(
                            "on_error.{key} must be \"open\" or \"closed\", not {}",
                            super::lua_ctx::describe(other)
                        ),
                    ));
                }
            };
            if mode == FailMode::Open && !MAY_BE_OPEN.contains(&key.as_str()) {
                return Err(SchemaError::keyed(
                    &key,
                    format!(
                        "on_error.{key} cannot be \"open\": {key} is a decision hook and there \
                         is no safe answer to fall back to when it fails, so it always fails \
                         closed (only guard, on_transition and on_notify may be open)"
                    ),
                ));
            }
            match key.as_str() {
                "guard" => modes.guard = mode,
                "on_transition" => modes.on_transition = mode,
                _ => {}
            }
        }
        Ok(modes)
    }
}

impl PolicyHost {
    /// How the engine must treat a failure of `hook` (a hook's name, or a guard's name
    /// such as `guards[A -> B]`, i.e. what [`super::PolicyError::hook`] returns). The engine
    /// applies the mode; the host only reports it. Unknown names are [`FailMode::Closed`].
    pub fn fail_mode(&self, hook: &str) -> FailMode {
        self.fail_modes.get(hook)
    }

    /// Every hook's failure mode, in documentation order: `verdict`, `salvage`, `next_prompt`,
    /// `audit_prompt`, `checks`, `approve`, `permit`, `egress`, `guard`, `on_transition`,
    /// `on_notify`.
    pub fn fail_modes(&self) -> Vec<(String, FailMode)> {
        self.fail_modes.all()
    }
}
