//! The `egress(ctx, req)` hook: a connection an agent asks the egress proxy to open that the
//! policy's `network` lists do not decide (`req`: `host`, `port`, `agent`, `role`).
//!
//! It fails closed, like `permit`, and that cannot be changed: a hook that errors, runs out of
//! time or answers nonsense refuses the connection, with a reason that names the error and its
//! `file:line`. A hook that returns nothing leaves it to the default, which refuses too (the
//! host is not on the policy's allowlist).

use super::calls::{bad, policy_setup, reason_of};
use super::error::PolicyError;
use super::{HookCtx, PolicyHost};
use mlua::Value;

/// The hook's name in errors, `on_error` and decision records.
pub(super) const EGRESS_HOOK: &str = "egress";

const EGRESS_EXPECTED: &str =
    "\"allow\" or \"deny\" (or true/false), optionally and a reason; or nil for the default";

/// The rule a connection that neither list nor hook allowed is refused by.
pub const NOT_ALLOWED: &str = crate::sandbox::egress::DEFAULT_DENY_RULE;

// The proxy's question, which the sandbox asks and the hook answers: the sandbox's noun.
pub use crate::sandbox::egress::EgressQuery;

/// What the egress hook decided about one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressDecision {
    /// Whether the connection may be opened.
    pub allow: bool,
    /// Why, when the hook said (always set on a refusal: the hook's reason, or what failed).
    pub reason: Option<String>,
}

/// The egress hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressHookAnswer {
    /// The policy has no `egress` hook, or it returned nil: the default decides (refused:
    /// [`NOT_ALLOWED`]).
    Default,
    /// The hook decided (a failed hook is a refusal naming the error).
    Decided(EgressDecision),
}

impl EgressHookAnswer {
    /// Whether the connection may be opened; the default refuses.
    pub fn allows(&self) -> bool {
        matches!(self, EgressHookAnswer::Decided(d) if d.allow)
    }

    /// The rule to record for a refusal: the hook's reason, or [`NOT_ALLOWED`].
    pub fn rule(&self) -> &str {
        match self {
            EgressHookAnswer::Decided(EgressDecision {
                reason: Some(r), ..
            }) => r,
            _ => NOT_ALLOWED,
        }
    }
}

impl PolicyHost {
    /// Asks the `egress` hook about a connection the `network` lists left open. Never fails:
    /// a hook that fails is a refusal whose reason names the error and its `file:line`
    /// ([`PolicyHost::try_egress`] gives the error itself, to record its kind).
    pub fn egress(&self, req: &EgressQuery, ctx: &HookCtx) -> EgressHookAnswer {
        match self.try_egress(req, ctx) {
            Ok(Some(d)) => EgressHookAnswer::Decided(d),
            Ok(None) => EgressHookAnswer::Default,
            Err(e) => EgressHookAnswer::Decided(self.egress_failure(&e)),
        }
    }

    /// [`PolicyHost::egress`] without the fail-closed mapping: `Ok(None)` when there is no hook
    /// or it returned nil, `Err` when it failed (the caller must then refuse:
    /// [`PolicyHost::egress_failure`] builds that answer).
    pub fn try_egress(
        &self,
        req: &EgressQuery,
        ctx: &HookCtx,
    ) -> Result<Option<EgressDecision>, PolicyError> {
        let Some((policy, f)) = self
            .lua
            .as_ref()
            .and_then(|p| p.parsed.egress.as_ref().map(|f| (p, f)))
        else {
            return Ok(None);
        };
        let hook = EGRESS_HOOK;
        let setup = |e| policy_setup(hook, e, policy.memory_limit);
        let ctx = policy.ctx_table(hook, ctx)?;
        let t = policy.lua.create_table_with_capacity(0, 4).map_err(setup)?;
        let fill = || -> mlua::Result<()> {
            t.raw_set("host", super::lua_ctx::head(&req.host))?;
            t.raw_set("port", req.port)?;
            t.raw_set("agent", super::lua_ctx::head(&req.agent))?;
            t.raw_set("role", req.role.as_str())?;
            t.set_readonly(true);
            Ok(())
        };
        fill().map_err(setup)?;
        let (answer, reason): (Value, Value) = policy.call(hook, f, (ctx, t))?;
        let allow = match &answer {
            Value::Nil => return Ok(None),
            Value::Boolean(b) => Some(*b),
            Value::String(s) => match s.to_string_lossy().trim().to_ascii_lowercase().as_str() {
                "allow" => Some(true),
                "deny" => Some(false),
                _ => None,
            },
            _ => None,
        }
        .ok_or_else(|| bad(hook, &answer, EGRESS_EXPECTED))?;
        let reason = reason_of(hook, reason)?;
        let reason = match (allow, reason) {
            (false, None) => Some(format!(
                "refused by the policy's egress hook{}",
                self.hook_site(hook)
                    .map(|s| format!(" at {s}"))
                    .unwrap_or_default()
            )),
            (_, r) => r,
        };
        Ok(Some(EgressDecision { allow, reason }))
    }

    /// The refusal that stands for a failed `egress` hook: its reason names the error and
    /// where it happened (the error's own `file:line`, else the line the hook is defined on).
    pub fn egress_failure(&self, err: &PolicyError) -> EgressDecision {
        let site = err
            .location()
            .or_else(|| self.hook_site(EGRESS_HOOK))
            .map(|s| format!(" at {s}"))
            .unwrap_or_default();
        EgressDecision {
            allow: false,
            reason: Some(format!(
                "refused because the egress policy failed{site}: {err}"
            )),
        }
    }
}
