//! The built-in behaviour: verdict parsing, salvage rule, prompt templates.

use super::super::{
    NO_VERDICT_REASON, PolicyHost, default_audit_prompt, default_salvage,
    default_worker_retry_prompt, parse_verdict,
};
use super::full_ctx;
use crate::machine::{Salvage, Verdict};
use crate::process::{Evidence, StopReason};

#[test]
fn json_whole_output() {
    let d = parse_verdict(r#"{"verdict": "done", "reason": "all green", "confidence": 0.9}"#);
    assert_eq!(d.verdict, Some(Verdict::Done));
    assert_eq!(d.reason.as_deref(), Some("all green"));
    assert_eq!(d.confidence, Some(0.9));
}

#[test]
fn json_multiline_whole_output() {
    let d = parse_verdict("{\n  \"verdict\": \"IMPOSSIBLE\",\n  \"reason\": \"no such api\"\n}\n");
    assert_eq!(d.verdict, Some(Verdict::Impossible));
    assert_eq!(d.reason.as_deref(), Some("no such api"));
}

#[test]
fn json_line_last_one_wins() {
    let out = "thinking...\n{\"verdict\": \"retry\", \"reason\": \"a\"}\nmore\n{\"verdict\": \"done\"}\nbye";
    let d = parse_verdict(out);
    assert_eq!(d.verdict, Some(Verdict::Done));
    assert_eq!(d.reason, None);
}

#[test]
fn json_beats_verdict_line() {
    let d = parse_verdict("VERDICT: DONE\n{\"verdict\": \"retry\", \"reason\": \"tests\"}");
    assert_eq!(d.verdict, Some(Verdict::Retry));
}

#[test]
fn verdict_line_with_inline_reason() {
    let d = parse_verdict("looked at it\nVERDICT: RETRY - the build is broken\n");
    assert_eq!(d.verdict, Some(Verdict::Retry));
    assert_eq!(d.reason.as_deref(), Some("the build is broken"));
}

#[test]
fn verdict_line_case_insensitive_and_last_wins() {
    let d =
        parse_verdict("Verdict: retry\nthen\nverdict: Done\nREASON: fixed it\nsee above\n\ntail");
    assert_eq!(d.verdict, Some(Verdict::Done));
    assert_eq!(d.reason.as_deref(), Some("fixed it\nsee above"));
}

#[test]
fn verdict_line_markdown_and_confidence() {
    let d = parse_verdict("**VERDICT:** IMPOSSIBLE\nReason: needs network\nCONFIDENCE: 0.8");
    assert_eq!(d.verdict, Some(Verdict::Impossible));
    assert_eq!(d.reason.as_deref(), Some("needs network"));
    assert_eq!(d.confidence, Some(0.8));
}

#[test]
fn no_verdict_is_none_with_reason() {
    for out in [
        "",
        "I think it's fine",
        "VERDICT: MAYBE",
        "{\"verdict\": \"perhaps\"}",
    ] {
        let d = parse_verdict(out);
        assert_eq!(d.verdict, None, "{out:?}");
        assert_eq!(d.reason.as_deref(), Some(NO_VERDICT_REASON));
    }
}

#[test]
fn builtin_host_uses_builtins() {
    let host = PolicyHost::builtin();
    assert_eq!(host.hash(), "builtin");
    assert!(host.hooks().is_empty());
    assert_eq!(host.limits().max_iterations, 5);
    let ctx = full_ctx();
    assert_eq!(
        host.verdict("VERDICT: DONE", &ctx).unwrap().verdict,
        Some(Verdict::Done)
    );
    assert_eq!(
        host.next_prompt(&ctx).unwrap(),
        default_worker_retry_prompt(&ctx)
    );
    assert_eq!(host.audit_prompt(&ctx).unwrap(), default_audit_prompt(&ctx));
    let (a, b) = (
        crate::machine::SessionState::AuditPending,
        crate::machine::SessionState::AuditorExecuting,
    );
    assert_eq!(
        host.guard(a, b, &ctx).unwrap(),
        super::super::GuardOutcome::Allow
    );
    host.on_transition(a, b, &ctx).unwrap();
}

#[test]
fn default_salvage_rule() {
    let mut ev = Evidence {
        reason: Some(StopReason::ExitCode),
        ..Evidence::default()
    };
    assert_eq!(default_salvage(&ev).salvage, Salvage::Nothing);
    ev.changed_files = vec!["a.rs".into()];
    assert_eq!(default_salvage(&ev).salvage, Salvage::Partial);
    ev.changed_files.clear();
    for pause in [StopReason::Interrupted, StopReason::OneshotDied] {
        ev.reason = Some(pause);
        assert_eq!(default_salvage(&ev).salvage, Salvage::Partial);
    }
    ev.reason = Some(StopReason::InactivityTimeout);
    assert_eq!(default_salvage(&ev).salvage, Salvage::Nothing);
}

#[test]
fn retry_prompt_has_feedback_block() {
    let mut ctx = full_ctx();
    ctx.worker_output = "I changed foo.rs".into();
    let p = default_worker_retry_prompt(&ctx);
    assert!(p.starts_with("fix the failing test\n"));
    assert!(p.contains("PREVIOUS ATTEMPT: I changed foo.rs\n"));
    assert!(p.contains("CRITIQUE: the test still fails\n"));
    assert!(p.contains("INSTRUCTION: Improve the previous attempt based on the critique."));
}

#[test]
fn audit_prompt_asks_for_a_parseable_verdict() {
    let mut ctx = full_ctx();
    ctx.worker_output = "done, all tests pass".into();
    let p = default_audit_prompt(&ctx);
    assert!(p.contains("fix the failing test"));
    assert!(p.contains("done, all tests pass"));
    assert!(p.contains("VERDICT: DONE"));
    assert!(p.contains("VERDICT: IMPOSSIBLE"));
    assert!(p.contains(r#"{"verdict": "#));
}
