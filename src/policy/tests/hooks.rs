//! Each hook's happy path and its contract violations.

use super::super::{GuardOutcome, PolicyError};
use super::{full_ctx, host};
use crate::machine::{Salvage, SessionState as S, Verdict};
use crate::process::{Evidence, StopReason};

fn bad_return(e: PolicyError) -> String {
    assert!(matches!(e, PolicyError::BadReturn { .. }), "{e:?}");
    e.to_string()
}

#[test]
fn verdict_hook_string_and_multiple_returns() {
    let h = host(
        "return { verdict = function(out, ctx)\n\
           if out:find('LGTM') then return 'done', 'reviewer said so', 0.75 end\n\
           return 'retry', 'iteration ' .. ctx.iteration\n\
         end }",
    );
    let ctx = full_ctx();
    let d = h.verdict("LGTM!", &ctx).unwrap();
    assert_eq!(d.verdict, Some(Verdict::Done));
    assert_eq!(d.reason.as_deref(), Some("reviewer said so"));
    assert_eq!(d.confidence, Some(0.75));
    let d = h.verdict("meh", &ctx).unwrap();
    assert_eq!(d.verdict, Some(Verdict::Retry));
    assert_eq!(d.reason.as_deref(), Some("iteration 2"));
}

/// The auditor's answer that fits the verdict schema reaches the hook as a read-only table;
/// the built-in reads it when the words alone would not do (JSON across lines in prose).
#[test]
fn verdict_hook_reads_the_structured_answer() {
    let h = host(
        "return { verdict = function(out, ctx)\n\
           local s = ctx.structured\n\
           if s == nil then return 'retry', 'no structure' end\n\
           if #s.open_criteria > 0 then return 'retry', 'open: ' .. s.open_criteria[1] end\n\
           return s.verdict, s.reason, s.confidence\n\
         end }",
    );
    let mut ctx = full_ctx();
    assert_eq!(
        h.verdict("", &ctx).unwrap().reason.as_deref(),
        Some("no structure")
    );
    ctx.structured = Some(serde_json::json!({
        "verdict": "done", "reason": "fine", "confidence": 0.5, "open_criteria": ["a test"]
    }));
    assert_eq!(
        h.verdict("", &ctx).unwrap().reason.as_deref(),
        Some("open: a test")
    );
    ctx.structured = Some(serde_json::json!({
        "verdict": "done", "reason": "fine", "confidence": 0.5, "open_criteria": []
    }));
    let d = h.verdict("", &ctx).unwrap();
    assert_eq!((d.verdict, d.confidence), (Some(Verdict::Done), Some(0.5)));
    let writes = host("return { verdict = function(out, ctx) ctx.structured.verdict = 'x' end }");
    assert!(writes.verdict("", &ctx).is_err(), "read-only");

    let builtin = host("return {}");
    let prose =
        "Looks good.\n```json\n{\n  \"verdict\": \"impossible\",\n  \"reason\": \"no api\"\n}\n```";
    assert_eq!(
        builtin.verdict(prose, &full_ctx()).unwrap().verdict,
        None,
        "words alone hold no verdict line"
    );
    ctx.structured = Some(serde_json::json!({"verdict": "impossible", "reason": "no api"}));
    assert_eq!(
        builtin.verdict(prose, &ctx).unwrap().verdict,
        Some(Verdict::Impossible)
    );
}

#[test]
fn verdict_hook_table_return() {
    let h = host(
        "return { verdict = function() return { verdict = 'IMPOSSIBLE', reason = 'no', confidence = 1 } end }",
    );
    let d = h.verdict("", &full_ctx()).unwrap();
    assert_eq!(d.verdict, Some(Verdict::Impossible));
    assert_eq!(d.reason.as_deref(), Some("no"));
    assert_eq!(d.confidence, Some(1.0));
}

#[test]
fn verdict_hook_bad_returns() {
    let ctx = full_ctx();
    let cases = [
        (
            "return 3",
            "use the answer of hook verdict: it returned a number; expected \"done\", \"retry\" \
             or \"impossible\"",
        ),
        ("return 'maybe'", "hook verdict: it returned \"maybe\""),
        ("return nil", "hook verdict: it returned nil"),
        ("return", "hook verdict: it returned nil"),
        ("return 'done', 5", "expected a reason string, or nil"),
        ("return 'done', nil, 7", "confidence between 0 and 1"),
        ("return {}", "returned nil"),
    ];
    for (body, want) in cases {
        let h = host(&format!("return {{ verdict = function() {body} end }}"));
        let text = bad_return(h.verdict("x", &ctx).unwrap_err());
        assert!(text.contains(want), "{body}: {text}");
    }
}

#[test]
fn verdict_hook_sees_output_tail_only() {
    let h = host("return { verdict = function(out) return 'retry', tostring(#out) end }");
    let huge = "y".repeat(super::super::MAX_LUA_STRING + 1000);
    let d = h.verdict(&huge, &full_ctx()).unwrap();
    assert_eq!(d.reason, Some(super::super::MAX_LUA_STRING.to_string()));
}

#[test]
fn salvage_hook_sees_evidence() {
    let h = host(
        "return { salvage = function(ev, ctx)\n\
           if ev.reason == 'interrupted' then return 'partial', 'paused' end\n\
           if #ev.changed_files > 0 and ev.exit_code == 0 then return { salvage = 'success' } end\n\
           return 'nothing', ev.changes_source\n\
         end }",
    );
    let ctx = full_ctx();
    let mut ev = Evidence {
        reason: Some(StopReason::Interrupted),
        exit_code: Some(0),
        changes_source: "git".into(),
        ..Evidence::default()
    };
    assert_eq!(h.salvage(&ev, &ctx).unwrap().salvage, Salvage::Partial);
    ev.reason = Some(StopReason::InactivityTimeout);
    ev.changed_files = vec!["a.rs".into()];
    assert_eq!(h.salvage(&ev, &ctx).unwrap().salvage, Salvage::Success);
    ev.exit_code = Some(1);
    let d = h.salvage(&ev, &ctx).unwrap();
    assert_eq!(d.salvage, Salvage::Nothing);
    assert_eq!(d.reason.as_deref(), Some("git"));
}

#[test]
fn salvage_hook_bad_return() {
    let h = host("return { salvage = function() return 'everything' end }");
    let text = bad_return(h.salvage(&Evidence::default(), &full_ctx()).unwrap_err());
    assert!(
        text.contains("expected \"success\", \"partial\" or \"nothing\""),
        "{text}"
    );
}

#[test]
fn guard_allows_vetoes_and_defaults() {
    let h = host(
        "return { guards = {\n\
           ['AUDIT_PENDING -> AUDITOR_EXECUTING'] = function(ctx)\n\
             if #ctx.changed_files > 10 then return false, 'too many files: ' .. #ctx.changed_files end\n\
             return true\n\
           end,\n\
           ['REITERATION_PENDING -> WORKER_EXECUTING'] = function(ctx) return false end,\n\
         } }",
    );
    let mut ctx = full_ctx();
    assert_eq!(
        h.guard(S::AuditPending, S::AuditorExecuting, &ctx).unwrap(),
        GuardOutcome::Veto("too many files: 20".into())
    );
    ctx.changed_files.truncate(3);
    assert_eq!(
        h.guard(S::AuditPending, S::AuditorExecuting, &ctx).unwrap(),
        GuardOutcome::Allow
    );
    assert_eq!(
        h.guard(S::ReiterationPending, S::WorkerExecuting, &ctx)
            .unwrap(),
        GuardOutcome::Veto("vetoed by guards[REITERATION_PENDING -> WORKER_EXECUTING]".into())
    );
    assert_eq!(
        h.guard(S::Created, S::WorkerExecuting, &ctx).unwrap(),
        GuardOutcome::Allow
    );
}

#[test]
fn guard_must_return_explicit_boolean() {
    for body in ["", "return nil", "return 1", "return 'yes'"] {
        let h = host(&format!(
            "return {{ guards = {{ ['AUDIT_PENDING -> AUDITOR_EXECUTING'] = function() {body} end }} }}"
        ));
        let e = h
            .guard(S::AuditPending, S::AuditorExecuting, &full_ctx())
            .unwrap_err();
        assert_eq!(e.hook(), Some("guards[AUDIT_PENDING -> AUDITOR_EXECUTING]"));
        let text = bad_return(e);
        assert!(
            text.contains("expected true, or false and a reason"),
            "{body}: {text}"
        );
    }
}

#[test]
fn ctx_fields_reach_lua_and_track_changes() {
    let h = host(
        "return { next_prompt = function(ctx)\n\
           return table.concat({ ctx.session_id, ctx.state, ctx.iteration, ctx.max_iterations,\n\
             ctx.task, ctx.exit_code, ctx.reason, ctx.elapsed, #ctx.worker_output, #ctx.auditor_output,\n\
             ctx.verdict, ctx.critique, ctx.confidence, ctx.changed_files[20], ctx.workdir,\n\
             tostring(ctx.worker_prompt ~= nil) }, '|')\n\
         end }",
    );
    let mut ctx = full_ctx();
    let p = h.next_prompt(&ctx).unwrap();
    assert_eq!(
        p,
        "3f1c2a9e-0000-4000-8000-000000000001|AUDIT_PENDING|2|5|fix the failing test|0|exit_code|42.5|4096|4096|retry|the test still fails|0.7|src/file_19.rs|/tmp/work|true"
    );
    ctx.iteration = 3;
    ctx.state = Some(S::ReiterationPending);
    ctx.changed_files[19] = "other.rs".into();
    ctx.verdict = Some(Verdict::Done);
    let p = h.next_prompt(&ctx).unwrap();
    assert!(p.contains("|REITERATION_PENDING|3|"), "{p}");
    assert!(p.contains("|done|"), "{p}");
    assert!(p.contains("|other.rs|"), "{p}");
    // Fields that become None must read as nil again.
    ctx.exit_code = None;
    ctx.confidence = None;
    let e = h.next_prompt(&ctx).unwrap_err();
    assert!(
        e.to_string().contains("test.lua:"),
        "concat of nil should fail: {e}"
    );
}

#[test]
fn ctx_is_read_only() {
    let h = host("return { next_prompt = function(ctx) ctx.iteration = 99 return 'x' end }");
    let e = h.next_prompt(&full_ctx()).unwrap_err();
    assert!(matches!(e, PolicyError::Sandbox { .. }), "{e:?}");
    let h = host(
        "return { next_prompt = function(ctx) table.insert(ctx.changed_files, 'x') return 'x' end }",
    );
    assert!(h.next_prompt(&full_ctx()).is_err());
}

#[test]
fn prompts_from_hooks_or_builtin() {
    let h = host(
        "return {\n\
           next_prompt = function(ctx) if ctx.iteration > 2 then return 'custom ' .. ctx.task end end,\n\
           audit_prompt = function(ctx) return 'audit: ' .. ctx.task end,\n\
         }",
    );
    let mut ctx = full_ctx();
    assert_eq!(
        h.next_prompt(&ctx).unwrap(),
        super::super::default_worker_retry_prompt(&ctx)
    );
    ctx.iteration = 3;
    assert_eq!(h.next_prompt(&ctx).unwrap(), "custom fix the failing test");
    assert_eq!(h.audit_prompt(&ctx).unwrap(), "audit: fix the failing test");

    for body in ["return 3", "return ''", "return {}"] {
        let h = host(&format!(
            "return {{ audit_prompt = function() {body} end }}"
        ));
        let text = bad_return(h.audit_prompt(&ctx).unwrap_err());
        assert!(
            text.starts_with("use the answer of hook audit_prompt: it returned"),
            "{text}"
        );
    }
}

#[test]
fn on_transition_observes_and_keeps_state() {
    let h = host(
        "local seen = {}\n\
         return {\n\
           on_transition = function(from, to, ctx) seen[#seen + 1] = from .. '>' .. to end,\n\
           next_prompt = function() return table.concat(seen, ',') end,\n\
         }",
    );
    let ctx = full_ctx();
    h.on_transition(S::Created, S::WorkerExecuting, &ctx)
        .unwrap();
    h.on_transition(S::WorkerExecuting, S::AuditPending, &ctx)
        .unwrap();
    assert_eq!(
        h.next_prompt(&ctx).unwrap(),
        "CREATED>WORKER_EXECUTING,WORKER_EXECUTING>AUDIT_PENDING"
    );
    let h = host("return { on_transition = function() error('observer broke') end }");
    let e = h
        .on_transition(S::Created, S::WorkerExecuting, &ctx)
        .unwrap_err();
    assert!(e.to_string().contains("test.lua:1: observer broke"), "{e}");
    assert_eq!(e.location().as_deref(), Some("test.lua:1"));
}
