//! Policies: the CLI's `policy` commands, their errors, hot reload, trust, the docs' Lua examples, `eval`.
//!
//! One test binary for the area (linking is what CI spends its time on); one module per file.

#[path = "../common/mod.rs"]
mod common;

mod docs_examples;
mod eval_cli;
mod policy_cli;
mod policy_errors;
mod reload_init;
mod reload_session;
mod reload_slot;
mod reload_sources;
mod reload_trust;
mod reload_watch;
mod saboteur_cli;
