//! Codex, in the two ways oneshot runs it: `exec --json` (a stream it only reads: the
//! auditor's one-shot judgement, which takes an output schema) and `app-server` (JSON-RPC both
//! ways: the worker, whose approvals the policy answers and whose turns can be interrupted).

mod agent;
mod app;
mod app_wire;
mod exec;

pub(crate) use agent::AGENT;
pub use app::CodexAppDriver;
pub use exec::CodexParser;

use crate::agent::driver::{Driver, DriverSetup, Listen};

/// The `exec --json` reader (the registry's `Protocol::Codex`): it only listens.
pub(crate) fn exec_driver(_: DriverSetup) -> Box<dyn Driver> {
    Box::new(Listen(CodexParser::default()))
}

/// The `app-server` driver for one run (the registry's `Protocol::CodexAppServer`).
pub(crate) fn app_driver(setup: DriverSetup) -> Box<dyn Driver> {
    Box::new(CodexAppDriver::new(setup))
}
