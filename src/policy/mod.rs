//! The Lua policy host (Luau via mlua): sandbox, budgets, typed hook calls.
//!
//! # How it works
//!
//! [`PolicyHost::load`] builds a fresh Luau state with only safe libraries (stubs explain what
//! is withheld), makes its globals read-only, caps its memory, runs the file's top-level code
//! under the hook budget and validates the table it returns: unknown keys, wrong types, guard
//! keys naming transitions the machine never makes and bad regexes all fail the load with a
//! `file:line`. The engine then asks typed questions ([`PolicyHost::verdict`],
//! [`PolicyHost::guard`], [`PolicyHost::permit`], [`PolicyHost::approve`], …); each call runs under a wall-clock budget enforced by Luau's
//! interrupt (backed by a watchdog thread for native code that never polls it), and its
//! answer is validated. A missing hook means the built-in behaviour, which is
//! also exposed as plain functions ([`parse_verdict`], [`default_salvage`], the prompt
//! templates) and written out in `policies/default.lua`.
//!
//! Around the host: `require` of sibling modules ([`PolicyHost::sources`] lists them for the
//! reload watcher), the `oneshot` helper table, declared failure modes
//! ([`PolicyHost::fail_mode`]), the policy's own tests ([`run_tests`],
//! [`validate_for_reload`]), [`check`], the editor stubs, and [`PolicyService`] (a policy on a
//! thread of its own, for callers on other threads: an `ask`'s tool requests, a job's panel).
//! `docs/policy.md` is the reference.

mod approve;
mod budget;
mod calls;
mod check;
mod ctx;
mod decision;
mod error;
mod failmode;
mod helpers;
mod host;
mod limits;
mod lua_ctx;
mod modules;
mod permit;
mod prompts;
mod reload;
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

pub use approve::{Approval, ApprovalJob, ApprovalResult, ApproveDecision, default_approve};
pub use budget::{BUDGET_KEYS, Budget, BudgetLevel, BudgetResource, BudgetUse};
pub use check::{CheckReport, EffectiveBudget, EffectiveLimits, EffectiveRetry, check};
pub use ctx::HookCtx;
pub use decision::{
    AUDITOR_EDIT_REASON, FILE_EDIT_TOOLS, GuardOutcome, PermitDecision, SalvageDecision,
    VerdictDecision, default_permit, default_salvage,
};
pub use error::{LOAD_HOOK, PolicyError};
pub use failmode::{FAIL_MODE_HOOKS, FailMode};
pub use host::{PolicyHost, PolicyOptions};
pub use limits::{LIMIT_KEYS, Limits};
pub use lua_ctx::{LAZY_FIELDS, MAX_LUA_STRING};
pub use permit::MAX_INPUT_DEPTH;
pub use prompts::{default_audit_prompt, default_worker_retry_prompt};
pub use reload::*;
pub use retry::{RETRY_KEYS, RetryLimits};
pub use sandbox::interrupt_hooks;
pub use schema::TOP_LEVEL_KEYS;
pub(crate) use schema::suggest as suggest_name;
pub use service::{PolicyService, SERVICE_GONE};
pub use stubs::{stubs_luals, stubs_luau};
pub use syntax::check_syntax;
pub use testing::{TestCase, TestReport, run_tests, test_file_for, validate_for_reload};
pub use verdict::{NO_VERDICT_REASON, parse_verdict, read_verdict, verdict_word};
pub use watchdog::{OnStuck, WatchdogOptions};
