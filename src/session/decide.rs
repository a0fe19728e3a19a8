//! Who answers the judgement calls: the [`Decide`] trait the core asks, and [`PolicyJudge`],
//! which answers from a loaded policy.
//!
//! The engine asks the live (hot-reloaded) policy; `policy replay` asks another policy; the
//! tests ask whatever they load. The core neither knows nor cares which.

use super::PolicyRef;
use crate::machine::SessionState;
use crate::pipeline::Redactor;
use crate::policy::{
    FailMode, GuardOutcome, HookCtx, Limits, PermitDecision, PolicyError, PolicyHost,
    SalvageDecision, VerdictDecision,
};
use crate::process::Evidence;
use std::borrow::Cow;
use std::time::Instant;

/// A hook that failed: what the decision record, the history and the user see. The message is a
/// complete sentence: `failed to run hook verdict: p.lua:3: …` ([`crate::error::failure`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookError {
    /// The hook (`verdict`, `guards[A -> B]`, …).
    pub hook: String,
    /// `runtime`, `budget`, `memory`, `sandbox`, `bad_return`, …
    pub kind: String,
    /// The message, with `file:line` where Lua knew it.
    pub message: String,
}

impl HookError {
    /// The user interrupted the hook while it ran ([`crate::policy::PolicyError::Interrupted`]):
    /// nothing was decided, and the session pauses rather than fails.
    pub fn interrupted(&self) -> bool {
        self.kind == "interrupted"
    }
}

/// Longest hook error message kept (longer ones are cut): an error is for a person to read, and
/// a policy that raises a 10 MB string must not put 10 MB into the state file and the log.
pub(crate) const MAX_HOOK_ERROR: usize = 4 * 1024;
/// Longest reason, veto or `oneshot.log` line kept from a hook.
pub(crate) const MAX_HOOK_TEXT: usize = 64 * 1024;
/// Longest prompt kept from `next_prompt` or `audit_prompt`.
pub(crate) const MAX_PROMPT: usize = 1024 * 1024;

impl HookError {
    /// From a policy error raised by `hook`.
    pub fn new(hook: &str, e: &PolicyError) -> HookError {
        HookError::at(hook, e, None)
    }

    /// From a policy error raised by `hook`, defined at `site` (`file:line`): an error Lua
    /// could not place itself says where the hook is, so every policy error names a line.
    pub fn at(hook: &str, e: &PolicyError, site: Option<String>) -> HookError {
        let mut message = cap(crate::error::failure(e), MAX_HOOK_ERROR);
        if e.location().is_none()
            && let Some(site) = site
        {
            message.push_str(&format!(" (the hook is defined at {site})"));
        }
        HookError {
            hook: e.hook().unwrap_or(hook).to_string(),
            kind: e.kind().to_string(),
            message,
        }
    }
}

/// `text` cut to at most `max` bytes (at a character boundary), saying how much was cut.
pub fn cap(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let cut = text.len();
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    text.push_str(&format!(" … [{} more bytes cut]", cut - at));
    text
}

/// A hook's answer with what the decision record needs to say about the call.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer<T> {
    /// The answer, or how the hook failed.
    pub result: Result<T, HookError>,
    /// The policy has no such hook: the built-in behaviour answered.
    pub builtin: bool,
    /// How long the call took.
    pub duration_us: u64,
    /// What the hook said through `oneshot.log(level, message)`, in order.
    pub logs: Vec<(String, String)>,
}

/// The judgement calls the core asks for. Every method answers from one policy generation;
/// swapping generations happens between steps ([`Event::PolicyChanged`](super::Event)).
pub trait Decide {
    /// The policy answering: its path, hash and generation.
    fn policy(&self) -> PolicyRef;
    /// Its limits.
    fn limits(&self) -> Limits;
    /// How a failure of `hook` is handled.
    fn fail_mode(&self, hook: &str) -> FailMode;
    /// `text` with secrets removed (the environment's and the policy's patterns), for the
    /// free text the core stores (reasons, warnings).
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str>;
    /// The auditor's verdict from its output.
    fn verdict(&mut self, output: &str, ctx: &HookCtx) -> Answer<VerdictDecision>;
    /// What a stopped worker's leftovers are worth.
    fn salvage(&mut self, evidence: &Evidence, ctx: &HookCtx) -> Answer<SalvageDecision>;
    /// Whether `from -> to` may happen.
    fn guard(
        &mut self,
        from: SessionState,
        to: SessionState,
        ctx: &HookCtx,
    ) -> Answer<GuardOutcome>;
    /// The worker's prompt for the next iteration.
    fn next_prompt(&mut self, ctx: &HookCtx) -> Answer<String>;
    /// The auditor's prompt.
    fn audit_prompt(&mut self, ctx: &HookCtx) -> Answer<String>;
    /// Tells the observer about a transition that happened.
    fn on_transition(&mut self, from: SessionState, to: SessionState, ctx: &HookCtx) -> Answer<()>;
    /// Whether `role`'s agent may use `tool` with `input`. A failed hook is an `Err` here; the
    /// core denies (permit fails closed).
    fn permit(
        &mut self,
        role: crate::process::Role,
        tool: &str,
        input: &serde_json::Value,
        ctx: &HookCtx,
    ) -> Answer<PermitDecision>;
    /// The policy's `network` lists (none unless a policy has them).
    fn network_rules(&self) -> crate::sandbox::egress::NetworkRules {
        crate::sandbox::egress::NetworkRules::default()
    }
    /// The `egress` hook's own answer for a connection the lists leave open (`None`: no hook,
    /// or it returned nil: refused by default). A failed hook is an `Err`; the core refuses.
    fn egress(
        &mut self,
        req: &crate::policy::EgressQuery,
        ctx: &HookCtx,
    ) -> Answer<Option<crate::policy::EgressDecision>> {
        let _ = (req, ctx);
        Answer {
            result: Ok(None),
            builtin: true,
            duration_us: 0,
            logs: Vec::new(),
        }
    }
    /// Whether the policy has `checks` at all: only then is [`Decide::checks`] asked (and
    /// recorded), so a policy without them leaves no question in the log.
    fn has_checks(&self) -> bool {
        false
    }
    /// The checks the audit runs before its auditor (the policy's; the session adds its own).
    /// None unless a policy says so.
    fn checks(&mut self, ctx: &HookCtx) -> Answer<Vec<crate::check::Check>> {
        let _ = ctx;
        Answer {
            result: Ok(Vec::new()),
            builtin: true,
            duration_us: 0,
            logs: Vec::new(),
        }
    }
    /// Whether the next worker iteration continues the worker agent's own conversation.
    fn continue_conversation(&self) -> bool {
        true
    }
}

/// Answers from one loaded policy generation, redacting with `redactor`.
pub struct PolicyJudge<'a> {
    host: &'a PolicyHost,
    generation: u32,
    redactor: &'a Redactor,
}

impl<'a> PolicyJudge<'a> {
    /// A judge for `host`, which is generation `generation` of the session's policy.
    pub fn new(host: &'a PolicyHost, generation: u32, redactor: &'a Redactor) -> Self {
        PolicyJudge {
            host,
            generation,
            redactor,
        }
    }

    fn ask<T>(
        &self,
        key: &str,
        call: impl FnOnce(&PolicyHost) -> Result<T, PolicyError>,
    ) -> Answer<T> {
        let start = Instant::now();
        let result = call(self.host).map_err(|e| {
            let site = self.host.hook_site(e.hook().unwrap_or(key));
            HookError::at(key, &e, site)
        });
        let mut logs = self.host.take_logs();
        for (_, message) in &mut logs {
            *message = cap(std::mem::take(message), MAX_HOOK_TEXT);
        }
        Answer {
            result,
            builtin: !self.host.has_hook(key),
            duration_us: start.elapsed().as_micros() as u64,
            logs,
        }
    }
}

impl Decide for PolicyJudge<'_> {
    fn policy(&self) -> PolicyRef {
        PolicyRef {
            path: self.host.path().map(|p| p.to_path_buf()),
            hash: self.host.hash().to_string(),
            generation: self.generation,
            budget: crate::policy::Budget::set(self.host.limits().budget),
        }
    }

    fn limits(&self) -> Limits {
        *self.host.limits()
    }

    fn network_rules(&self) -> crate::sandbox::egress::NetworkRules {
        self.host.network_rules().clone()
    }

    fn egress(
        &mut self,
        req: &crate::policy::EgressQuery,
        ctx: &HookCtx,
    ) -> Answer<Option<crate::policy::EgressDecision>> {
        self.ask("egress", |h| h.try_egress(req, ctx))
    }

    fn fail_mode(&self, hook: &str) -> FailMode {
        self.host.fail_mode(hook)
    }

    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.redactor.redact(text)
    }

    fn verdict(&mut self, output: &str, ctx: &HookCtx) -> Answer<VerdictDecision> {
        self.ask("verdict", |h| {
            h.verdict(output, ctx).map(|mut v| {
                v.reason = v.reason.map(|r| cap(r, MAX_HOOK_TEXT));
                v
            })
        })
    }

    fn salvage(&mut self, evidence: &Evidence, ctx: &HookCtx) -> Answer<SalvageDecision> {
        self.ask("salvage", |h| {
            h.salvage(evidence, ctx).map(|mut s| {
                s.reason = s.reason.map(|r| cap(r, MAX_HOOK_TEXT));
                s
            })
        })
    }

    fn guard(
        &mut self,
        from: SessionState,
        to: SessionState,
        ctx: &HookCtx,
    ) -> Answer<GuardOutcome> {
        let key = format!("guards[{from} -> {to}]");
        self.ask(&key, |h| {
            h.guard(from, to, ctx).map(|g| match g {
                GuardOutcome::Veto(why) => GuardOutcome::Veto(cap(why, MAX_HOOK_TEXT)),
                allow => allow,
            })
        })
    }

    fn next_prompt(&mut self, ctx: &HookCtx) -> Answer<String> {
        self.ask("next_prompt", |h| {
            h.next_prompt(ctx).map(|p| cap(p, MAX_PROMPT))
        })
    }

    fn audit_prompt(&mut self, ctx: &HookCtx) -> Answer<String> {
        self.ask("audit_prompt", |h| {
            h.audit_prompt(ctx).map(|p| cap(p, MAX_PROMPT))
        })
    }

    fn on_transition(&mut self, from: SessionState, to: SessionState, ctx: &HookCtx) -> Answer<()> {
        self.ask("on_transition", |h| h.on_transition(from, to, ctx))
    }

    fn permit(
        &mut self,
        role: crate::process::Role,
        tool: &str,
        input: &serde_json::Value,
        ctx: &HookCtx,
    ) -> Answer<PermitDecision> {
        self.ask("permit", |h| {
            h.try_permit(role, tool, input, ctx).map(|mut p| {
                p.reason = p.reason.map(|r| cap(r, MAX_HOOK_TEXT));
                p
            })
        })
    }

    fn has_checks(&self) -> bool {
        self.host.has_checks()
    }

    fn checks(&mut self, ctx: &HookCtx) -> Answer<Vec<crate::check::Check>> {
        self.ask("checks", |h| h.checks(ctx))
    }

    fn continue_conversation(&self) -> bool {
        self.host.continue_conversation()
    }
}
