//! The policies in `policies/` behave as their comments say.

use super::super::{
    FILE_EDIT_TOOLS, GuardOutcome, PolicyHost, PolicyOptions, default_permit, default_salvage,
    parse_verdict,
};
use super::full_ctx;
use crate::machine::{Salvage, SessionState as S, Verdict};
use crate::process::{Evidence, Role, StopReason};
use std::path::Path;

fn shipped(name: &str) -> PolicyHost {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("policies")
        .join(name);
    PolicyHost::load(&path, PolicyOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn default_lua_matches_the_builtins() {
    let h = shipped("default.lua");
    assert_eq!(*h.limits(), super::super::Limits::default());
    let ctx = full_ctx();
    for out in [
        "",
        "no verdict here",
        "VERDICT: DONE",
        "verdict: retry - the build is broken",
        "**VERDICT:** IMPOSSIBLE\nREASON: needs network",
        "{\"verdict\": \"retry\", \"reason\": \"tests fail\"}",
        "VERDICT: DONE\n{\"verdict\": \"retry\", \"reason\": \"json wins\"}",
    ] {
        let lua = h.verdict(out, &ctx).unwrap();
        let rust = parse_verdict(out);
        assert_eq!(
            (lua.verdict, &lua.reason),
            (rust.verdict, &rust.reason),
            "{out:?}"
        );
    }
    // An agent auditor's answer in the verdict schema: both read `ctx.structured`.
    let mut with = ctx.clone();
    with.structured = Some(serde_json::json!({
        "verdict": "retry", "reason": "add a test", "confidence": 0.75, "open_criteria": ["t"]
    }));
    let lua = h.verdict("prose only", &with).unwrap();
    let rust = PolicyHost::builtin().verdict("prose only", &with).unwrap();
    assert_eq!(lua, rust);
    assert_eq!(rust.verdict, Some(Verdict::Retry));
    for (reason, files) in [
        (StopReason::ExitCode, 0),
        (StopReason::ExitCode, 2),
        (StopReason::Interrupted, 0),
        (StopReason::OneshotDied, 0),
        (StopReason::InactivityTimeout, 0),
    ] {
        let ev = Evidence {
            reason: Some(reason),
            changed_files: vec!["f".into(); files],
            ..Evidence::default()
        };
        assert_eq!(
            h.salvage(&ev, &ctx).unwrap(),
            default_salvage(&ev),
            "{reason} {files}"
        );
    }
    assert_eq!(
        h.continue_conversation(),
        PolicyHost::builtin().continue_conversation()
    );
    for role in [Role::Worker, Role::Auditor] {
        for tool in FILE_EDIT_TOOLS
            .iter()
            .chain(&["Bash", "Read", "command_execution", "x"])
        {
            let input = serde_json::json!({ "command": "ls" });
            assert_eq!(
                h.permit(role, tool, &input, &ctx).unwrap(),
                default_permit(role, tool),
                "{role:?} {tool}"
            );
        }
    }
}

#[test]
fn strict_lua_demands_an_explicit_clean_done() {
    let h = shipped("strict.lua");
    assert_eq!(h.limits().max_iterations, 3);
    assert_eq!(h.redact_patterns().len(), 3);
    let mut ctx = full_ctx();
    ctx.worker_output = "all fixed".into();
    assert_eq!(
        h.verdict("VERDICT: DONE", &ctx).unwrap().verdict,
        Some(Verdict::Done)
    );
    assert_eq!(
        h.verdict("looks done to me", &ctx).unwrap().verdict,
        None,
        "no explicit verdict: the auditor is asked again"
    );
    ctx.worker_output = "fixed, TODO: tests".into();
    let d = h.verdict("VERDICT: DONE", &ctx).unwrap();
    assert_eq!(d.verdict, Some(Verdict::Retry));
    assert!(d.reason.unwrap().contains("TODO"));

    let ev = Evidence {
        reason: Some(StopReason::ExitCode),
        changed_files: vec!["a".into()],
        ..Evidence::default()
    };
    assert_eq!(h.salvage(&ev, &ctx).unwrap().salvage, Salvage::Nothing);

    ctx.elapsed = 10.0;
    assert_eq!(
        h.guard(S::ReiterationPending, S::WorkerExecuting, &ctx)
            .unwrap(),
        GuardOutcome::Allow
    );
    ctx.elapsed = 3600.0;
    assert!(matches!(
        h.guard(S::ReiterationPending, S::WorkerExecuting, &ctx).unwrap(),
        GuardOutcome::Veto(r) if r.contains("60 minutes")
    ));
}

#[test]
fn lenient_lua_keeps_work() {
    let h = shipped("lenient.lua");
    assert_eq!(h.limits().max_iterations, 10);
    let ctx = full_ctx();
    assert_eq!(
        h.verdict("nothing useful", &ctx).unwrap().verdict,
        Some(Verdict::Retry)
    );
    assert_eq!(
        h.verdict("Verdict: pass", &ctx).unwrap().verdict,
        Some(Verdict::Done)
    );
    let mut ev = Evidence {
        reason: Some(StopReason::InactivityTimeout),
        exit_code: Some(0),
        changed_files: vec!["a".into()],
        ..Evidence::default()
    };
    assert_eq!(h.salvage(&ev, &ctx).unwrap().salvage, Salvage::Success);
    ev.exit_code = Some(2);
    assert_eq!(h.salvage(&ev, &ctx).unwrap().salvage, Salvage::Partial);
    ev.changed_files.clear();
    assert_eq!(h.salvage(&ev, &ctx).unwrap().salvage, Salvage::Nothing);
}

#[test]
fn shipped_policy_tests_pass() {
    for name in [
        "default.lua",
        "strict.lua",
        "lenient.lua",
        "auto-approve.lua",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("policies")
            .join(name);
        let report = super::super::run_tests(&path, PolicyOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(report.cases.len() >= 7, "{name}: {}", report.render());
        assert_eq!(report.failed(), 0, "{name}:\n{}", report.render());
    }
}
