//! The real agent CLIs (Claude Code, Codex, Gemini CLI, Aider, Cline), pinned by
//! `scripts/install-agents.sh`, driven headless against the scripted fake model server on
//! 127.0.0.1. A missing CLI is a skip locally and a failure when `CI` is set: these tests are the
//! canary for a CLI release that changes its protocol. See docs/agents-offline.md.

mod agents;
mod fake_model;
