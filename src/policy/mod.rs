//! The Lua policy host (Luau via mlua): sandbox, budgets, typed hook calls.
//!
//! # How it works
//!
//! [`PolicyHost::load`] builds a fresh Luau state with only safe libraries (stubs explain what
//! is withheld), makes its globals read-only, caps its memory, runs the file's top-level code
//! under the hook budget and validates the table it returns: unknown keys, wrong types, guard
//! keys naming transitions the machine never makes and bad regexes all fail the load with a
//! `file:line`. The engine then asks typed questions ([`PolicyHost::verdict`],
//! [`PolicyHost::guard`], [`PolicyHost::permit`], [`PolicyHost::egress`], [`PolicyHost::approve`], [`PolicyHost::on_notify`], …); each call runs under a wall-clock budget enforced by Luau's
//! interrupt (backed by a watchdog thread for native code that never polls it), and its
//! answer is validated. A missing hook means the built-in behaviour, which is written out in
//! `policies/default.lua`.
//!
//! Around the host: `require` of sibling modules ([`PolicyHost::sources`] lists them for the
//! reload watcher), the `oneshot` helper table, declared failure modes
//! ([`PolicyHost::fail_mode`]), the policy's own tests ([`run_tests`], also run before a
//! reload activates a policy), [`check`], the editor stubs, and [`PolicyService`] (a policy on a
//! thread of its own, for callers on other threads: an `ask`'s tool requests, a job's panel).
//! `docs/policy.md` is the reference.

mod approve;
mod budget;
mod calls;
mod check;
mod checks;
mod ctx;
mod ctx_lists;
mod decision;
mod egress;
mod error;
mod failmode;
mod helpers;
mod host;
mod limits;
mod lua_ctx;
mod modules;
mod network;
mod notify;
mod permit;
mod prompts;
mod redactor;
mod reload;
mod resources;
mod retry;
mod sandbox;
mod schema;
mod service;
mod stubs;
mod syntax;
mod testing;
mod verdict;
mod watchdog;

#[cfg(test)]
mod tests;

// The hook's data, defined below the policy and the job core (both speak it).
pub use crate::approval::{Approval, ApprovalJob, ApprovalResult, ApproveDecision};
pub use budget::{Budget, BudgetLevel, BudgetResource, BudgetUse};
pub use check::{CheckReport, EffectiveBudget, EffectiveLimits, EffectiveRetry, check};
pub use ctx::HookCtx;
pub use decision::{GuardOutcome, PermitDecision, SalvageDecision, VerdictDecision};
pub use egress::{EgressDecision, EgressHookAnswer, EgressQuery, NOT_ALLOWED};
pub use error::PolicyError;
pub use failmode::FailMode;
pub use host::{PolicyHost, PolicyOptions};
pub use limits::Limits;
pub use network::{ENV_KEYS, NETWORK_KEYS, check_host_pattern};
pub use notify::{MAX_EXTRA_FIELDS, MAX_EXTRA_KEY, MAX_EXTRA_STRING, NotifyDecision, NotifyFacts};
pub use redactor::redactor;
pub use reload::*;
pub use resources::parse_size;
pub use retry::RetryLimits;
pub use sandbox::interrupt_hooks;
pub use service::PolicyService;
pub use stubs::{stubs_luals, stubs_luau};
pub use syntax::check_syntax;
pub use testing::{TestCase, TestReport, run_tests, test_file_for};
pub use verdict::verdict_word;
pub use watchdog::{OnStuck, WatchdogOptions};

pub(crate) use decision::{FILE_EDIT_TOOLS, default_permit};
pub(crate) use schema::suggest as suggest_name;
pub(crate) use testing::validate_for_reload;
pub(crate) use verdict::{NO_VERDICT_REASON, structured_verdict};

// What only the crate's tests reach through this module: the built-in answers and the key
// lists the stubs and the error messages are checked against.
#[cfg(test)]
pub(crate) use {
    crate::approval::default_approve,
    budget::BUDGET_KEYS,
    decision::{AUDITOR_EDIT_REASON, default_salvage},
    error::LOAD_HOOK,
    failmode::FAIL_MODE_HOOKS,
    limits::LIMIT_KEYS,
    lua_ctx::{LAZY_FIELDS, MAX_LUA_STRING},
    permit::MAX_INPUT_DEPTH,
    prompts::{default_audit_prompt, default_worker_retry_prompt},
    retry::RETRY_KEYS,
    schema::TOP_LEVEL_KEYS,
    verdict::parse_verdict,
};
