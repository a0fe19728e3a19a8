//! `oneshot::replay` on logs recorded the way the engine writes them: differences, the
//! simulated path, blobs, partial logs and malformed records.

mod replay_support;

use S::*;
use oneshot::machine::SessionState as S;
use oneshot::policy::PolicyHost;
use oneshot::replay::{Hook, ReplayError, ReplayOptions, load_decisions, replay, replay_with};
use replay_support::{Recorder, policy};
use serde_json::json;

const DONE: &str = "looks good\nVERDICT: DONE\nREASON: all tests pass";
const RETRY: &str = "VERDICT: RETRY\nREASON: the tests fail";

/// A builtin-policy session: retry once, then done.
fn retry_then_done() -> Vec<serde_json::Value> {
    let builtin = PolicyHost::builtin();
    Recorder::new(&builtin, "fix the parser").drive(&["tried", "fixed"], &[RETRY, DONE])
}

#[test]
fn identical_policy_changes_nothing() {
    let records = retry_then_done();
    let recorded = load_decisions(&records).unwrap();
    let report = replay(&recorded, &PolicyHost::builtin());
    assert!(report.differences.is_empty(), "{report:#?}");
    assert!(report.errors.is_empty() && report.incomplete.is_empty());
    assert_eq!(report.simulated_path, report.recorded_path);
    assert_eq!(
        report.recorded_path,
        [
            Created,
            WorkerExecuting,
            AuditPending,
            AuditorExecuting,
            ReiterationPending,
            WorkerExecuting,
            AuditPending,
            AuditorExecuting,
            Completed
        ]
    );
    assert!(report.complete && report.divergence.is_none() && report.stopped.is_none());
    assert_eq!(report.decisions, recorded.decisions.len());
    assert_eq!(report.replayed, report.decisions);
}

#[test]
fn a_policy_file_identical_to_the_recorded_one_changes_nothing() {
    let strict = policy(include_str!("../policies/strict.lua"));
    let records = Recorder::new(&strict, "t").drive(&["a", "b", "c"], &[RETRY, RETRY, DONE]);
    let report = replay(&load_decisions(&records).unwrap(), &strict);
    assert!(report.differences.is_empty(), "{report:#?}");
    assert_eq!(report.simulated_path, report.recorded_path);
}

const ALWAYS_RETRY: &str =
    r#"return { verdict = function(output, ctx) return "retry", "strict" end }"#;

#[test]
fn stricter_verdict_stops_at_the_worker_run_that_never_happened() {
    let builtin = PolicyHost::builtin();
    let records = Recorder::new(&builtin, "t").drive(&["done it"], &[DONE]);
    let report = replay(&load_decisions(&records).unwrap(), &policy(ALWAYS_RETRY));
    assert_eq!(report.differences.len(), 1, "{report:#?}");
    let d = &report.differences[0];
    assert_eq!(
        (d.hook, d.iteration, d.state),
        (Hook::Verdict, 1, AuditorExecuting)
    );
    assert_eq!((d.old.as_str(), d.new.as_str()), ("done", "retry"));
    assert_eq!(
        report.simulated_path,
        [
            Created,
            WorkerExecuting,
            AuditPending,
            AuditorExecuting,
            ReiterationPending,
            WorkerExecuting
        ]
    );
    let stopped = report.stopped.as_deref().unwrap();
    assert!(
        stopped.contains("iteration 2 of the worker never ran"),
        "{stopped}"
    );
    assert!(report.complete);
}

#[test]
fn lenient_verdict_completes_earlier() {
    let records = retry_then_done();
    let lenient = policy(r#"return { verdict = function() return "done" end }"#);
    let report = replay(&load_decisions(&records).unwrap(), &lenient);
    assert_eq!(
        report.simulated_path,
        [
            Created,
            WorkerExecuting,
            AuditPending,
            AuditorExecuting,
            Completed
        ]
    );
    assert!(report.stopped.is_none());
    // Both verdicts are re-run: only the first differs.
    let diffs: Vec<_> = report
        .differences
        .iter()
        .map(|d| (d.iteration, d.new.as_str()))
        .collect();
    assert_eq!(diffs, [(1, "done")]);
}

#[test]
fn a_new_guard_veto_fails_the_session() {
    let records = retry_then_done();
    let guarded = policy(
        r#"return { guards = { ["AUDIT_PENDING -> AUDITOR_EXECUTING"] = function(ctx)
             return false, "no auditing today" end } }"#,
    );
    let report = replay(&load_decisions(&records).unwrap(), &guarded);
    assert_eq!(
        report.simulated_path,
        [Created, WorkerExecuting, AuditPending, Failed]
    );
    let d = &report.differences[0];
    assert_eq!(
        (d.hook, d.old.as_str(), d.new.as_str()),
        (Hook::Guard, "allow", "deny: no auditing today")
    );
    assert_eq!(report.differences.len(), 2, "both audits are vetoed now");
    assert!(report.stopped.is_none());
}

#[test]
fn a_guard_that_now_allows_stops_where_facts_run_out() {
    let vetoing = policy(
        r#"return { guards = { ["AUDIT_PENDING -> AUDITOR_EXECUTING"] = function(ctx)
             return false, "no" end } }"#,
    );
    let records = Recorder::new(&vetoing, "t").drive(&["w"], &[DONE]);
    let recorded = load_decisions(&records).unwrap();
    assert_eq!(recorded.final_state, Some(Failed));
    let report = replay(&recorded, &PolicyHost::builtin());
    assert_eq!(
        report.simulated_path,
        [Created, WorkerExecuting, AuditPending, AuditorExecuting]
    );
    assert!(
        report
            .stopped
            .as_deref()
            .unwrap()
            .contains("auditor of iteration 1 never ran")
    );
}

#[test]
fn a_lower_iteration_limit_fails_the_session() {
    let builtin = PolicyHost::builtin();
    let records = Recorder::new(&builtin, "t").drive(&["a", "b", "c"], &[RETRY, RETRY, DONE]);
    let two = policy("return { limits = { max_iterations = 2 } }");
    let report = replay(&load_decisions(&records).unwrap(), &two);
    assert_eq!(
        report.simulated_path,
        [
            Created,
            WorkerExecuting,
            AuditPending,
            AuditorExecuting,
            ReiterationPending,
            WorkerExecuting,
            AuditPending,
            AuditorExecuting,
            ReiterationPending,
            Failed
        ]
    );
    assert!(
        report.differences.is_empty(),
        "no hook answers differently: {report:#?}"
    );
    assert!(
        report
            .divergence
            .as_deref()
            .unwrap()
            .contains("max_iterations is 2")
    );
}

#[test]
fn a_higher_iteration_limit_goes_on_to_the_run_never_recorded() {
    let one = policy("return { limits = { max_iterations = 1 } }");
    let records = Recorder::new(&one, "t").drive(&["a"], &[RETRY]);
    let report = replay(&load_decisions(&records).unwrap(), &PolicyHost::builtin());
    assert_eq!(report.recorded_path.last(), Some(&Failed));
    assert_eq!(report.simulated_path.last(), Some(&WorkerExecuting));
    assert!(
        report
            .stopped
            .as_deref()
            .unwrap()
            .contains("iteration 2 of the worker")
    );
}

#[test]
fn long_strings_are_read_back_from_blobs() {
    let long = format!("{}\nVERDICT: DONE", "x".repeat(1000));
    let builtin = PolicyHost::builtin();
    let records = Recorder::new(&builtin, "t").drive(&[&"w".repeat(600)], &[&long]);
    assert!(records.iter().any(|r| r["type"] == "blob"));
    let recorded = load_decisions(&records).unwrap();
    let verdict = recorded
        .decisions
        .iter()
        .find(|d| d.hook == Hook::Verdict)
        .unwrap();
    let oneshot::replay::DecisionInput::Verdict { output, ctx } = &verdict.input else {
        panic!("a verdict input");
    };
    assert_eq!(output, &long);
    assert_eq!(ctx.auditor_output, long);
    assert_eq!(ctx.worker_output, "w".repeat(600));
    assert!(recorded.decisions.iter().all(|d| d.is_complete()));
    // The audit prompt (over 256 bytes) came from a blob too, and still compares equal.
    assert!(replay(&recorded, &builtin).differences.is_empty());
}

#[test]
fn a_missing_blob_marks_the_decision_incomplete() {
    let long = format!("{}\nVERDICT: DONE", "x".repeat(1000));
    let builtin = PolicyHost::builtin();
    let records: Vec<_> = Recorder::new(&builtin, "t")
        .drive(&["w"], &[&long])
        .into_iter()
        .filter(|r| r["type"] != "blob")
        .collect();
    let recorded = load_decisions(&records).unwrap();
    assert!(recorded.decisions.iter().any(|d| !d.is_complete()));
    let report = replay(&recorded, &builtin);
    assert!(!report.incomplete.is_empty());
    assert!(report.replayed < report.decisions);
    let stopped = report.stopped.as_deref().unwrap();
    assert!(stopped.contains("missing from the log"), "{stopped}");
    assert!(report.render_table().contains("not replayed"));
}

#[test]
fn a_running_session_replays_as_far_as_it_goes() {
    let builtin = PolicyHost::builtin();
    // The worker of iteration 2 is still running.
    let records = Recorder::new(&builtin, "t").drive(&["a"], &[RETRY]);
    let recorded = load_decisions(&records).unwrap();
    assert_eq!(recorded.final_state, Some(WorkerExecuting));
    let report = replay(&recorded, &builtin);
    assert!(!report.complete);
    assert_eq!(report.simulated_path, report.recorded_path);
    assert!(report.stopped.is_none() && report.differences.is_empty());
    // A stricter verdict on a running session still works.
    let strict = replay(&recorded, &policy(ALWAYS_RETRY));
    assert!(!strict.complete && strict.differences.is_empty());
}

#[test]
fn a_failing_new_hook_is_an_error_and_fails_the_path() {
    let records = retry_then_done();
    let broken = policy("return { verdict = function(output, ctx) error('boom') end }");
    let report = replay(&load_decisions(&records).unwrap(), &broken);
    assert_eq!(report.errors.len(), 2);
    assert_eq!(report.errors[0].kind, "runtime");
    assert!(report.errors[0].error.contains("boom"));
    assert_eq!(report.simulated_path.last(), Some(&Failed));
    assert_eq!(report.simulated_path.len(), 5);
}

#[test]
fn reasons_count_only_when_asked() {
    let records = retry_then_done();
    let reworded = policy(
        r#"return { verdict = function(output, ctx)
             if output:find("DONE") then return "done", "fine" end
             return "retry", "other words" end }"#,
    );
    let recorded = load_decisions(&records).unwrap();
    assert!(replay(&recorded, &reworded).differences.is_empty());
    let opts = ReplayOptions {
        include_reasons: true,
    };
    let report = replay_with(&recorded, &reworded, opts);
    assert_eq!(report.differences.len(), 2);
    assert_eq!(report.differences[0].new, "retry: other words");
    assert_eq!(report.simulated_path, report.recorded_path);
}

#[test]
fn a_different_worker_prompt_stops_at_the_run_that_answered_the_old_one() {
    let records = retry_then_done();
    let prompts =
        policy(r#"return { next_prompt = function(ctx) return "try harder: " .. ctx.task end }"#);
    let report = replay(&load_decisions(&records).unwrap(), &prompts);
    let d = &report.differences[0];
    assert_eq!(d.hook, Hook::NextPrompt);
    assert!(d.new.starts_with("try harder"), "{}", d.new);
    assert!(d.old.chars().count() <= 61, "{}", d.old);
    assert!(
        report
            .stopped
            .as_deref()
            .unwrap()
            .contains("different prompt")
    );
    assert_eq!(report.simulated_path.last(), Some(&WorkerExecuting));
}

#[test]
fn malformed_records_name_their_position() {
    let mut records = retry_then_done();
    let at = records
        .iter()
        .position(|r| r["type"] == "decision")
        .unwrap();
    records[at]["input"]["ctx"] = json!("not a ctx");
    let err = load_decisions(&records).unwrap_err();
    assert!(
        matches!(err, ReplayError::Decision { record, .. } if record == at + 1),
        "{err}"
    );
    assert!(
        err.to_string().contains(&format!("record {}", at + 1)),
        "{err}"
    );

    let bad_state = [json!({"type": "state_change", "from": "NOWHERE", "to": "FAILED"})];
    assert!(matches!(
        load_decisions(&bad_state),
        Err(ReplayError::Transition { record: 1, .. })
    ));
    let bad_blob = [json!({"type": "blob", "sha256": "sha256:00"})];
    assert!(matches!(
        load_decisions(&bad_blob),
        Err(ReplayError::Blob { record: 1, .. })
    ));
}

#[test]
fn unknown_records_and_fields_are_ignored() {
    let mut records = retry_then_done();
    records.insert(2, json!({"type": "something_new", "x": 1}));
    for r in records.iter_mut() {
        r["extra_field"] = json!(true);
    }
    let report = replay(&load_decisions(&records).unwrap(), &PolicyHost::builtin());
    assert!(report.differences.is_empty() && report.stopped.is_none());
}

#[test]
fn render_table_snapshot() {
    let records = retry_then_done();
    let other = policy(
        r#"return {
             verdict = function(output, ctx) return "retry", "never good enough" end,
             next_prompt = function(ctx) return ctx.task .. "\n\nThe auditor said: " .. (ctx.critique or "") end,
           }"#,
    );
    let report = replay(&load_decisions(&records).unwrap(), &other);
    insta::assert_snapshot!(report.render_table());
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["differences"].as_array().unwrap().len(),
        report.differences.len()
    );
}
