//! The `approve(result, job)` hook: the built-in rule, the answers a hook may give, the ones
//! Rust refuses, and the shipped auto-approve policy.

use super::super::{
    Approval, ApprovalJob, ApprovalResult, ApproveDecision, PolicyError, PolicyHost, PolicyOptions,
    default_approve,
};
use super::host;
use crate::approval::{Harvest, PanelVerdict, PanelWord, Risk};
use std::path::Path;

fn completed(confidence: Option<f64>) -> ApprovalResult {
    ApprovalResult {
        outcome: "COMPLETED".into(),
        completed: true,
        verdict: Some("done".into()),
        reason: Some("all tests pass".into()),
        confidence,
        diff_stat: " src/a.rs | 2 +-\n 1 file changed".into(),
        files: vec!["src/a.rs".into()],
        empty_diff: false,
        panel: vec![PanelVerdict {
            auditor: "claude".into(),
            verdict: PanelWord::Done,
            reason: "fine".into(),
            confidence,
        }],
        panel_passed: Some(true),
    }
}

/// A session that completed, and a panel that did not pass its work.
fn panel_failed() -> ApprovalResult {
    ApprovalResult {
        completed: false,
        reason: Some("the panel did not pass (1 of 2 said done, 2 needed): b said retry".into()),
        panel_passed: Some(false),
        ..completed(Some(0.99))
    }
}

fn failed() -> ApprovalResult {
    ApprovalResult {
        outcome: "FAILED".into(),
        reason: Some("max_iterations".into()),
        ..ApprovalResult::default()
    }
}

fn job(risk: Risk) -> ApprovalJob {
    ApprovalJob {
        id: "job-1".into(),
        task: "fix the test".into(),
        risk,
        step: 1,
        max_loops: 5,
        no_progress_limit: 3,
        ..ApprovalJob::default()
    }
}

fn decided(approval: Approval, reason: Option<&str>) -> ApproveDecision {
    ApproveDecision {
        approval,
        reason: reason.map(String::from),
    }
}

#[test]
fn default_sends_a_failed_session_to_intervention() {
    let d = default_approve(&failed(), &job(Risk::Low));
    assert_eq!(
        d,
        decided(
            Approval::Intervene,
            Some("the session ended FAILED: max_iterations")
        )
    );
    assert_eq!(d.approval.harvest(), Harvest::InterventionRequired);
}

#[test]
fn default_names_the_no_progress_signal() {
    let mut j = job(Risk::Low);
    j.empty_diffs = 3;
    let d = default_approve(&completed(Some(1.0)), &j);
    assert_eq!(d.approval, Approval::Intervene);
    assert!(d.reason.unwrap().contains("3 empty diffs"));
    let mut j = job(Risk::Low);
    j.same_findings = 4;
    let d = default_approve(&completed(Some(1.0)), &j);
    assert!(d.reason.unwrap().contains("same findings 4 times"));
    // A limit of 0 means the signal is off.
    j.no_progress_limit = 0;
    assert_eq!(
        default_approve(&completed(None), &j).approval,
        Approval::Human
    );
}

#[test]
fn default_never_auto_approves() {
    let d = default_approve(&completed(Some(1.0)), &job(Risk::Low));
    assert_eq!(
        d,
        decided(
            Approval::Human,
            Some("a human signs off by default; a policy's approve hook may auto-approve")
        )
    );
    assert_eq!(d.approval.harvest(), Harvest::ApprovalRequired);
    assert_eq!(Approval::Approve.harvest(), Harvest::Success);
}

#[test]
fn no_policy_and_no_hook_mean_the_default() {
    let r = completed(Some(0.99));
    let j = job(Risk::Low);
    let want = default_approve(&r, &j);
    assert_eq!(PolicyHost::builtin().approve(&r, &j).unwrap(), want);
    assert_eq!(host("return {}").approve(&r, &j).unwrap(), want);
    let h = host("return { approve = function() return nil end }");
    assert_eq!(h.approve(&r, &j).unwrap(), want);
}

#[test]
fn hook_answers_with_a_word_and_reason_or_a_table() {
    let r = completed(Some(0.9));
    let j = job(Risk::Medium);
    let h = host("return { approve = function(r, j) return 'APPROVE', 'ok ' .. j.risk end }");
    assert_eq!(
        h.approve(&r, &j).unwrap(),
        decided(Approval::Approve, Some("ok medium"))
    );
    let h = host(
        "return { approve = function() return { approval = 'intervene', reason = 'no' } end }",
    );
    assert_eq!(
        h.approve(&r, &j).unwrap(),
        decided(Approval::Intervene, Some("no"))
    );
    let h = host("return { approve = function() return 'human' end }");
    assert_eq!(h.approve(&r, &j).unwrap(), decided(Approval::Human, None));
}

#[test]
fn hook_sees_every_field_read_only() {
    let mut j = job(Risk::High);
    j.counters.insert("rejects".into(), 2);
    j.inputs.insert("branch".into(), "main".into());
    let h = host(
        r#"return { approve = function(r, j)
  local seen = table.concat({ r.outcome, tostring(r.completed), r.verdict, r.reason,
    tostring(r.confidence), r.files[1], tostring(r.empty_diff), r.panel[1].auditor,
    r.panel[1].verdict, tostring(r.panel_passed), j.id, j.task, j.risk, j.step, j.max_loops, j.counters.rejects,
    j.inputs.branch, j.no_progress_limit }, ",")
  local ok = pcall(function() r.completed = false end)
  local ok2 = pcall(function() j.counters.rejects = 0 end)
  return "human", seen .. "," .. tostring(ok or ok2)
end }"#,
    );
    let d = h.approve(&completed(Some(0.5)), &j).unwrap();
    assert_eq!(
        d.reason.as_deref(),
        Some(
            "COMPLETED,true,done,all tests pass,0.5,src/a.rs,false,claude,done,true,job-1,\
             fix the test,high,1,5,2,main,3,false"
        )
    );
}

#[test]
fn bad_answers_are_policy_errors() {
    let r = completed(Some(0.9));
    let j = job(Risk::Low);
    for (body, got) in [
        ("return 1", "a number"),
        ("return 'maybe'", "\"maybe\""),
        ("return { approval = true }", "true"),
    ] {
        let h = host(&format!("return {{ approve = function() {body} end }}"));
        let e = h.approve(&r, &j).unwrap_err();
        assert!(matches!(e, PolicyError::BadReturn { .. }), "{body}: {e:?}");
        let text = e.to_string();
        assert!(text.contains("approve"), "{text}");
        assert!(text.contains(got), "{body}: {text}");
        assert!(text.contains("\"human\""), "{text}");
    }
    let h = host("return { approve = function() return 'human', 42 end }");
    assert!(h.approve(&r, &j).is_err());
}

#[test]
fn approving_a_failed_session_is_refused() {
    let h = host("return { approve = function() return 'approve', 'looks fine' end }");
    let e = h.approve(&failed(), &job(Risk::Low)).unwrap_err();
    assert!(matches!(e, PolicyError::BadReturn { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("a session that ended FAILED did not complete and cannot be auto-approved"),
        "{text}"
    );
    // Nor work the panel did not pass, though the session itself completed.
    let e = h.approve(&panel_failed(), &job(Risk::Low)).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("the panel did not pass the work, which cannot be auto-approved"),
        "{text}"
    );
    // Sending it to a human or to intervention is still the policy's call.
    let h = host("return { approve = function() return 'human' end }");
    assert_eq!(
        h.approve(&failed(), &job(Risk::Low)).unwrap().approval,
        Approval::Human
    );
}

#[test]
fn runaway_approve_hits_the_budget() {
    let h = host("return { approve = function() while true do end end }");
    let e = h
        .approve(&completed(Some(1.0)), &job(Risk::Low))
        .unwrap_err();
    assert!(matches!(e, PolicyError::Budget { .. }), "{e:?}");
    assert!(e.to_string().contains("hook approve"), "{e}");
    // The host still answers afterwards.
    assert!(h.approve(&failed(), &job(Risk::Low)).is_err());
}

#[test]
fn shipped_auto_approve_follows_seed_003() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/auto-approve.lua");
    let h = PolicyHost::load(&path, PolicyOptions::default()).unwrap();
    let ask = |r: &ApprovalResult, risk| h.approve(r, &job(risk)).unwrap().approval;
    assert_eq!(ask(&completed(Some(0.97)), Risk::Low), Approval::Approve);
    assert_eq!(ask(&completed(Some(0.95)), Risk::Low), Approval::Approve);
    assert_eq!(ask(&completed(Some(0.99)), Risk::High), Approval::Human);
    assert_eq!(ask(&completed(Some(0.99)), Risk::Medium), Approval::Human);
    assert_eq!(ask(&completed(Some(0.5)), Risk::Low), Approval::Human);
    assert_eq!(ask(&completed(None), Risk::Low), Approval::Human);
    assert_eq!(ask(&failed(), Risk::Low), Approval::Intervene);
    let mut stalled = job(Risk::Low);
    stalled.empty_diffs = 3;
    let d = h.approve(&completed(Some(0.99)), &stalled).unwrap();
    assert_eq!(d.approval, Approval::Intervene);
}

#[test]
fn default_sends_a_failed_panel_to_intervention_with_its_dissent() {
    let d = default_approve(&panel_failed(), &job(Risk::Low));
    assert_eq!(d.approval, Approval::Intervene);
    let why = d.reason.unwrap();
    assert!(why.starts_with("the panel did not pass"), "{why}");
    assert!(!why.contains("ended COMPLETED"), "{why}");
    // No panel: nil for the hook, None here.
    let h = host("return { approve = function(r) return 'human', tostring(r.panel_passed) end }");
    let mut r = completed(None);
    r.panel.clear();
    r.panel_passed = None;
    assert_eq!(
        h.approve(&r, &job(Risk::Low)).unwrap().reason.as_deref(),
        Some("nil")
    );
}
