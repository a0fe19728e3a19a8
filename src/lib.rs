//! oneshot runs AI coding agents in a supervised worker → auditor → retry loop.
//!
//! # How it works
//!
//! A *session* is one task. The [`engine`] drives it through the pure state table in
//! [`machine`] (seed 000 §2): the worker runs, then the auditor judges, then the loop retries,
//! recovers a dead or silent worker, or stops. Every run happens through an [`executor`] in its
//! own process group, and its output flows through the [`pipeline`] (timestamp → inactivity →
//! redact → log → parse) before anything touches disk. Decisions that are matters of judgement
//! — how to read a verdict, what to salvage, whether a transition is wise — are asked of a Lua
//! [`policy`] running sandboxed on Luau with time and memory budgets. The [`store`] keeps
//! `oneshot.json` (written atomically, journal first) and the NDJSON `oneshot-log.json`, under an
//! exclusive lock, so a session survives Ctrl-C, kill -9 and a crash and can be resumed.
//!
//! Every agent runs in a [`sandbox`] of its own: user, mount and network namespaces in which
//! oneshot's key, trust store and state are masked, a network whose one way out is oneshot's
//! egress proxy (the policy's allowlist; the model API's key added there, never in the agent's
//! environment), credentials left out of its environment, and limits on its memory and
//! processes; Landlock inside as the second wall.
//!
//! An [`agent`] (Claude Code, Codex, Gemini CLI, Aider, Cline, or any command) is driven
//! through its structured protocol, never its screen: its events become the session's
//! timeline, its transcript is reconciled with it, and a message said to a running session
//! reaches it as its protocol allows.
//!
//! A *job* is a task a team hands over: it runs a session in a git worktree of its own, then
//! waits for a human to approve, reject and land it. Its state table sits beside the session's
//! in [`machine::job`]; one synchronous step over typed phases, human verbs included, decides
//! every move ([`job::step::Step`], in the pure `job/core/`); the front doors (`job/api/`:
//! create, give a verb, land, say) and the [`job::runner`] only turn I/O into events and
//! carry out the effects. A [`job::store`] (SQLite, or PostgreSQL for a fleet of runners)
//! holds everything a job needs, so any runner and any dashboard reads it; `oneshot serve`
//! ([`serve`], with the `serve` feature) is that dashboard, painting the same readings the
//! CLI prints.
//!
//! Rust decides what is possible; Lua decides what is wise.
//!
//! # Enums that may grow
//!
//! Public enums a later version may extend — errors, events, updates, log records, reasons,
//! statuses, words, kinds (of agent, protocol, store, sink, target), levels and scopes — are
//! `#[non_exhaustive]`: match them with a `_` arm. These are exhaustive on purpose, because
//! their set is fixed, and a value added without every `match` deciding it should not compile:
//!
//! - [`SessionState`], [`machine::Trigger`], [`machine::Salvage`], [`machine::Verdict`],
//!   [`session::Phase`], [`session::Next`]: the states and moves of seed 000 §2.
//! - [`job::JobState`], [`job::JobTrigger`], [`job::JobPhase`], [`job::Harvest`]: the states
//!   and moves of the job's table (seed 001), as the session's are.
//! - [`policy::Approval`]: the `approve` hook's answers, one per [`job::Harvest`].
//! - [`job::landing::Land`]: landed or not, the table's `land` and `land_failed`.
//! - [`job::workspace::Cleanup`]: the workspace was removed or kept; there is no third way.
//! - [`job::replay::Compared`]: same, reason changed or differs — every case of an outcome
//!   and its reason compared.
//! - [`store::Stopped`]: asked without waiting, or let go while waited for (else an error).
//! - [`process::Role`]: worker and auditor. [`engine::Stream`]: stdout and stderr.
//! - [`sandbox::limits::Version`]: the kernel's two cgroup hierarchies.
//! - Answers whose every value a contract names: [`policy::GuardOutcome`] (allow or veto),
//!   [`policy::EgressHookAnswer`] (decided, or left to the default),
//!   [`sandbox::egress::EgressAnswer`] (allow or deny), [`policy::NotifyDecision`] (send or
//!   suppress), [`policy::FailMode`], [`policy::ReloadMode`], [`policy::BudgetLevel`],
//!   [`schema::Severity`], [`schema::Origin`], [`eval::Status`], [`eval::ManifestTarget`],
//!   [`config::Runs`], [`replay::ReplayVerdict`], [`store::Liveness`].
//! - [`config::Key`]: every key has its flag and its default in the command line, and a key
//!   added without them should not compile.
//!
//! The `exhaustive_enums_are_the_listed_ones` test holds this list to the code.

/// Declares modules that are internal to the crate, except for oneshot's own integration tests
/// and benches, which enable the `internals` feature (through a dev-dependency on the crate
/// itself) to reach them. Nothing in them is part of the public API.
macro_rules! internal {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        // What only the tests use (helpers, constants) looks unused without the feature.
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code, unused_imports)]
        pub(crate) mod $name;
    )*};
}

internal!(executor, pipeline);

pub mod agent;
pub mod ask;
pub mod check;
pub mod config;
pub mod engine;
pub mod error;
pub mod eval;
pub mod iterations;
pub mod job;
pub mod machine;
pub mod notify;
pub mod policy;
pub mod process;
pub mod redact;
pub mod replay;
pub mod sandbox;
pub mod schema;
#[cfg(feature = "serve")]
pub mod serve;
pub mod session;
pub mod store;
pub mod token;

// What the engine and `ask` share to run an agent, below both: what an agent is confined to
// (the reader of its stdout protocol is `agent::Tap`).
mod confinement;
mod paths;

// What the job core and the policy host both speak about a job's approval, below both.
mod approval;

#[cfg(test)]
mod exhaustive_tests;

/// Agent CLIs as worker or auditor: `SessionBuilder::worker_agent(AgentSpec::parse("claude")?)`.
pub use agent::{AgentKind, AgentSpec};
pub use engine::{
    Engine, EngineError, Interrupt, Observer, Options, ProcessClock, SessionBuilder, Status,
    Update, channel_observer,
};
pub use machine::SessionState;
/// Secret redaction as oneshot applies it before anything reaches disk or the terminal, for a
/// program that writes text of its own next to oneshot's.
pub use pipeline::{REDACTED, RedactError, Redactor};
pub use policy::{PolicyHost as Policy, PolicyOptions};
pub use session::{Outcome, Reason};
pub use store::Store;
