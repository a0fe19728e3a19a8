//! Codex, in the two ways oneshot runs it: `exec --json` (a stream it only reads: the
//! auditor's one-shot judgement, which takes an output schema) and `app-server` (JSON-RPC both
//! ways: the worker, whose approvals the policy answers and whose turns can be interrupted).

mod app;
mod app_wire;
mod exec;

pub use app::CodexAppDriver;
pub use exec::CodexParser;
