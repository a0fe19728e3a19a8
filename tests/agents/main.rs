//! The real agent CLIs (Claude Code, Codex, Gemini CLI, Aider, Cline), pinned by
//! `scripts/install-agents.sh`, driven headless against the scripted fake model server on
//! 127.0.0.1. A missing CLI is a skip locally and a failure when `CI` is set: these tests are the
//! canary for a CLI release that changes its protocol. See docs/agents-offline.md.
//!
//! With them, the recorded samples of each CLI's output (tests/samples/) read by the parsers.

#[path = "../fake_model/mod.rs"]
mod fake_model;

mod agent_samples;

mod aider;
mod ask;
mod autonomous;
mod claude;
mod cline;
mod codex;
mod containment;
mod eval;
mod gates;
mod gemini;
mod harness;
mod keys;
mod namer;
mod protocols;
mod readable;
mod resolver;
mod say;
mod server;
mod sessions;
mod starter;
mod stdio;
mod turns;
mod two_way;
mod with_oneshot;
