//! Tests of the policy host against real Luau (no mocks).

mod approve;
mod builtin;
mod helpers;
mod hooks;
mod lazy;
mod limits;
mod load;
mod modules;
mod network;
mod permit;
mod sandbox;
mod shipped;
mod testing;

use super::{HookCtx, PolicyError, PolicyHost, PolicyOptions};
use crate::machine::{SessionState, Verdict};

/// Loads `source` as `test.lua` with default options, panicking on failure.
fn host(source: &str) -> PolicyHost {
    match PolicyHost::from_source("test.lua", source, PolicyOptions::default()) {
        Ok(host) => host,
        Err(e) => panic!("policy failed to load: {e}"),
    }
}

/// Loads `source` as `test.lua` expecting a failure.
fn load_err(source: &str) -> PolicyError {
    match PolicyHost::from_source("test.lua", source, PolicyOptions::default()) {
        Ok(_) => panic!("policy loaded but should not have"),
        Err(e) => e,
    }
}

/// A context with every field set, as the engine would pass it mid-session.
fn full_ctx() -> HookCtx {
    HookCtx {
        session_id: "3f1c2a9e-0000-4000-8000-000000000001".into(),
        state: Some(SessionState::AuditPending),
        iteration: 2,
        max_iterations: 5,
        task: "fix the failing test".into(),
        worker_prompt: "fix the failing test".into(),
        exit_code: Some(0),
        reason: Some("exit_code".into()),
        elapsed: 42.5,
        worker_output: "w".repeat(4096),
        auditor_output: "a".repeat(4096),
        verdict: Some(Verdict::Retry),
        critique: Some("the test still fails".into()),
        confidence: Some(0.7),
        open_criteria_streak: 0,
        changed_files: (0..20).map(|i| format!("src/file_{i}.rs")).collect(),
        workdir: "/tmp/work".into(),
        structured: None,
        diff: None,
        checks: vec![crate::check::CheckResult {
            name: "tests".into(),
            run: "cargo test".into(),
            exit_code: Some(0),
            signal: None,
            stopped: None,
            duration_ms: 1200,
            tail: "test result: ok".into(),
        }],
        messages: vec![crate::session::Said {
            id: "6a1f0c2e-0000-4000-8000-000000000009".into(),
            actor: "ann".into(),
            ts: 1_700_000_000_000,
            text: "the fixture lives in tests/data".into(),
            now: false,
            status: crate::session::MessageStatus::Taken,
            taken_ms: Some(1_700_000_000_500),
            taken_iteration: Some(2),
        }],
        egress: Vec::new(),
    }
}
