//! Replay on logs the decision core itself wrote (driven by scripted runs, encoded and decoded
//! through the log's own types): differences, the simulated path, failure modes, blobs,
//! partial logs and malformed records.

use super::*;
use crate::machine::SessionState::{self as S, *};
use crate::policy::PolicyHost;
use crate::session::tests::script::{Driver, Run, policy};
use crate::store::record::blob::Blobber;
use crate::store::{Hook, Log};
use serde_json::{Value, json};

const DONE: &str = "looks good\nVERDICT: DONE\nREASON: all tests pass";
const RETRY: &str = "VERDICT: RETRY\nREASON: the tests fail";
const ALWAYS_RETRY: &str =
    r#"return { verdict = function(output, ctx) return "retry", "strict" end }"#;

/// The raw lines the engine would write for these records.
fn lines(d: &Driver) -> Vec<Value> {
    let mut blobber = Blobber::default();
    let redactor = crate::redact::Redactor::new(&[], Vec::new()).unwrap();
    d.records
        .iter()
        .flat_map(|r| blobber.encode(r, &redactor).unwrap())
        .collect()
}

/// Runs a session under `policy` through scripted runs and returns its raw log.
fn record(policy: PolicyHost, runs: impl IntoIterator<Item = Run>) -> Vec<Value> {
    let mut d = Driver::new(policy, "fix the parser", runs);
    d.run();
    lines(&d)
}

fn run(values: Vec<Value>, policy: &PolicyHost) -> ReplayReport {
    replay(&Log::decode(values), policy).unwrap()
}

/// A builtin-policy session: retry once, then done.
fn retry_then_done() -> Vec<Value> {
    record(
        PolicyHost::builtin(),
        [
            Run::Exit(0, "tried"),
            Run::Exit(0, RETRY),
            Run::Exit(0, "fixed"),
            Run::Exit(0, DONE),
        ],
    )
}

#[test]
fn identical_policy_changes_nothing() {
    let report = run(retry_then_done(), &PolicyHost::builtin());
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
    assert_eq!(report.replayed, report.decisions);
    assert!(!report.differs());
}

#[test]
fn a_policy_file_identical_to_the_recorded_one_changes_nothing() {
    let strict = policy(include_str!("../../policies/strict.lua"));
    let values = record(
        strict,
        [
            Run::Exit(0, "a"),
            Run::Exit(0, RETRY),
            Run::Exit(0, "b"),
            Run::Exit(0, RETRY),
            Run::Exit(0, "c"),
            Run::Exit(0, DONE),
        ],
    );
    let report = run(values, &policy(include_str!("../../policies/strict.lua")));
    assert!(report.differences.is_empty(), "{report:#?}");
    assert_eq!(report.simulated_path, report.recorded_path);
}

#[test]
fn a_stricter_verdict_goes_on_with_the_recorded_runs_until_the_limit() {
    let values = record(
        PolicyHost::builtin(),
        [Run::Exit(0, "done it"), Run::Exit(0, DONE)],
    );
    let report = run(values.clone(), &policy(ALWAYS_RETRY));
    assert_eq!(report.differences.len(), 1, "{report:#?}");
    let d = &report.differences[0];
    assert_eq!(
        (d.hook, d.iteration, d.state, d.kind),
        (Hook::Verdict, 1, AuditorExecuting, DifferenceKind::Answer)
    );
    assert_eq!(
        (d.old.as_str(), d.new.as_str()),
        ("done: all tests pass", "retry: strict")
    );
    let divergence = report.divergence.as_deref().unwrap();
    assert!(
        divergence.contains("verdict") && divergence.contains("done: all tests pass → retry"),
        "{divergence}"
    );
    // Every iteration after the first is the recorded one standing in; the policy retries each
    // until the limit.
    let end = report.simulated_end.clone().unwrap();
    assert_eq!((end.state, end.iteration), (Failed, 5));
    assert_eq!(report.stopped, None);
    assert_eq!(report.assumptions.len(), 2, "{:?}", report.assumptions);
    assert!(report.differs());
    // Stopping at the divergence says what was never recorded.
    let strict = replay_with(
        &Log::decode(values),
        &policy(ALWAYS_RETRY),
        ReplayOptions {
            stop_at_divergence: true,
        },
    )
    .unwrap();
    assert_eq!(
        strict.simulated_path,
        [
            Created,
            WorkerExecuting,
            AuditPending,
            AuditorExecuting,
            ReiterationPending,
            WorkerExecuting
        ]
    );
    let stopped = strict.stopped.as_deref().unwrap();
    assert!(
        stopped.contains("iteration 2 of the worker would run here"),
        "{stopped}"
    );
}

#[test]
fn lenient_verdict_completes_earlier() {
    let report = run(
        retry_then_done(),
        &policy(r#"return { verdict = function() return "done" end }"#),
    );
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
}

#[test]
fn a_new_guard_veto_fails_the_session() {
    let vetoing = policy(
        r#"return { guards = { ["AUDIT_PENDING -> AUDITOR_EXECUTING"] = function(ctx)
             return false, "no audits" end } }"#,
    );
    let report = run(retry_then_done(), &vetoing);
    assert_eq!(
        report.simulated_path,
        [Created, WorkerExecuting, AuditPending, Failed]
    );
    assert!(report.stopped.is_none());
    assert!(
        report.notes.iter().any(|n| n.contains("no audits")),
        "{:?}",
        report.notes
    );
}

#[test]
fn a_guard_that_now_allows_stops_where_no_run_can_stand_in() {
    let vetoing = policy(
        r#"return { guards = { ["AUDIT_PENDING -> AUDITOR_EXECUTING"] = function(ctx)
             return false, "no" end } }"#,
    );
    let values = record(vetoing, [Run::Exit(0, "w")]);
    let report = run(values, &PolicyHost::builtin());
    assert_eq!(report.recorded_path.last(), Some(&Failed));
    assert_eq!(
        report.simulated_path,
        [Created, WorkerExecuting, AuditPending, AuditorExecuting]
    );
    let stopped = report.stopped.as_deref().unwrap();
    assert!(
        stopped.contains("the auditor never ran to an end in the recording"),
        "{stopped}"
    );
}

#[test]
fn a_lower_iteration_limit_fails_the_session() {
    let values = record(
        PolicyHost::builtin(),
        [
            Run::Exit(0, "a"),
            Run::Exit(0, RETRY),
            Run::Exit(0, "b"),
            Run::Exit(0, RETRY),
            Run::Exit(0, "c"),
            Run::Exit(0, DONE),
        ],
    );
    let report = run(
        values,
        &policy("return { limits = { max_iterations = 2 } }"),
    );
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
    let divergence = report.divergence.as_deref().unwrap();
    assert!(divergence.contains("2 of 2 iterations"), "{divergence}");
}

#[test]
fn a_higher_iteration_limit_goes_on_with_the_recorded_runs_standing_in() {
    let one = policy("return { limits = { max_iterations = 1 } }");
    let values = record(one, [Run::Exit(0, "a"), Run::Exit(0, RETRY)]);
    let report = run(values, &PolicyHost::builtin());
    assert_eq!(report.recorded_path.last(), Some(&Failed));
    // The auditor said RETRY once; standing in, it says so every iteration, to the limit.
    let end = report.simulated_end.clone().unwrap();
    assert_eq!((end.state, end.iteration), (Failed, 5));
    assert!(end.reason.unwrap().contains("5 of 5 iterations"));
    assert!(
        report.assumptions[0].contains("iteration 1's run stands in for iterations 2 to 5"),
        "{:?}",
        report.assumptions
    );
}

#[test]
fn long_strings_are_read_back_from_blobs() {
    let long: &'static str =
        Box::leak(format!("{}\nVERDICT: DONE", "x".repeat(1000)).into_boxed_str());
    let worker: &'static str = Box::leak("w".repeat(600).into_boxed_str());
    let values = record(
        PolicyHost::builtin(),
        [Run::Exit(0, worker), Run::Exit(0, long)],
    );
    assert!(values.iter().any(|r| r["type"] == "blob"));
    let rec = Recording::from_log(&Log::decode(values.clone())).unwrap();
    let verdict = rec
        .decisions
        .iter()
        .find(|d| d.hook == Hook::Verdict)
        .unwrap();
    let crate::store::DecisionInput::Verdict { output, ctx } = &verdict.input else {
        panic!("a verdict input");
    };
    assert_eq!(output, long);
    assert_eq!(ctx.auditor_output, long);
    assert_eq!(ctx.worker_output, worker);
    assert!(rec.decisions.iter().all(|d| d.missing_blobs.is_empty()));
    let report = run(values, &PolicyHost::builtin());
    assert!(report.differences.is_empty());
    assert_eq!(report.simulated_path, report.recorded_path);
}

#[test]
fn a_missing_blob_marks_the_decision_incomplete_and_stops_the_path() {
    let long: &'static str =
        Box::leak(format!("{}\nVERDICT: DONE", "x".repeat(1000)).into_boxed_str());
    let values: Vec<Value> = record(
        PolicyHost::builtin(),
        [Run::Exit(0, "w"), Run::Exit(0, long)],
    )
    .into_iter()
    .filter(|r| r["type"] != "blob")
    .collect();
    let report = run(values, &PolicyHost::builtin());
    assert!(!report.incomplete.is_empty());
    assert!(report.replayed < report.decisions);
    let stopped = report.stopped.as_deref().unwrap();
    assert!(stopped.contains("missing from the log"), "{stopped}");
    assert!(report.render_table().contains("not replayed"));
}

#[test]
fn a_running_session_replays_as_far_as_it_goes() {
    // The worker of iteration 2 is still running.
    let mut d = Driver::new(
        PolicyHost::builtin(),
        "t",
        [Run::Exit(0, "a"), Run::Exit(0, RETRY), Run::OneshotDies],
    );
    d.run();
    let values = lines(&d);
    let report = run(values.clone(), &PolicyHost::builtin());
    assert!(!report.complete);
    assert_eq!(report.recorded_path.last(), Some(&WorkerExecuting));
    assert_eq!(report.simulated_path, report.recorded_path);
    assert!(
        report.stopped.is_none() && report.differences.is_empty(),
        "{report:#?}"
    );
    // A stricter verdict on a running session still works.
    let strict = run(values, &policy(ALWAYS_RETRY));
    assert!(!strict.complete);
    assert!(
        strict
            .differences
            .iter()
            .all(|d| d.kind == DifferenceKind::Reason),
        "only the critique's words differ: {strict:#?}"
    );
}

#[test]
fn a_failing_new_verdict_hook_is_an_error_and_fails_the_path() {
    let broken = policy("return { verdict = function(output, ctx) error('boom') end }");
    let report = run(retry_then_done(), &broken);
    assert_eq!(report.errors.len(), 2);
    assert_eq!(report.errors[0].kind, "runtime");
    assert_eq!(report.errors[0].fails, "closed");
    assert!(report.errors[0].error.contains("boom"));
    assert_eq!(report.simulated_path.last(), Some(&Failed));
    assert_eq!(report.simulated_path.len(), 5);
    assert!(!report.render_table().contains("no decision differs"));
}

/// The issue's own case: an observer that errors fails open, so a real run under it completes —
/// and so does its replay, which lists the errors without claiming nothing differs.
#[test]
fn a_failing_observer_fails_open_in_replay_as_in_a_real_run() {
    let source = r#"return { on_transition = function(from, to, ctx) error("boom") end }"#;
    // Recorded under the builtin policy, replayed under the failing observer…
    let report = run(retry_then_done(), &policy(source));
    assert_eq!(report.simulated_path, report.recorded_path);
    assert_eq!(report.simulated_path.last(), Some(&Completed));
    assert!(!report.errors.is_empty() && report.errors.iter().all(|e| e.fails == "open"));
    let table = report.render_table();
    assert!(!table.contains("no decision differs"), "{table}");
    assert!(table.contains("fails open"), "{table}");
    // …and recorded under it: a real run under that policy ends where the replay ends.
    let mut real = Driver::new(
        policy(source),
        "fix the parser",
        [Run::Exit(0, "w"), Run::Exit(0, DONE)],
    );
    assert_eq!(real.run().unwrap().state, Completed);
    let replayed = run(lines(&real), &policy(source));
    assert_eq!(replayed.simulated_path.last(), Some(&Completed));
    assert_eq!(replayed.simulated_path, replayed.recorded_path);
}

#[test]
fn an_observer_declared_closed_fails_the_replayed_path_as_a_run_would() {
    let source = r#"return { on_error = { on_transition = "closed" },
                             on_transition = function() error("boom") end }"#;
    let report = run(retry_then_done(), &policy(source));
    assert_eq!(report.simulated_path, [Created, WorkerExecuting, Failed]);
    assert_eq!(report.errors[0].fails, "closed");
    let mut real = Driver::new(policy(source), "fix the parser", [Run::Exit(0, "w")]);
    assert_eq!(real.run().unwrap().state, Failed);
    assert_eq!(real.trace(), report.simulated_path);
}

#[test]
fn a_changed_reason_is_a_difference_of_its_own_kind() {
    let reworded = policy(
        r#"return { verdict = function(output, ctx)
             if output:find("DONE") then return "done", "fine" end
             return "retry", "other words" end }"#,
    );
    let report = run(retry_then_done(), &reworded);
    assert_eq!(report.differences.len(), 2);
    assert!(
        report
            .differences
            .iter()
            .all(|d| d.kind == DifferenceKind::Reason)
    );
    assert_eq!(report.differences[0].old, "retry: the tests fail");
    assert_eq!(report.differences[0].new, "retry: other words");
    assert_eq!(report.verdict, ReplayVerdict::Differs);
    let table = report.render_table();
    assert!(table.contains("verdict (reason)"), "{table}");
    assert!(!table.contains("no difference"), "{table}");
    // The critique is the next prompt: the worker's run of iteration 2 stands in, recorded.
    let end = report.simulated_end.unwrap();
    assert_eq!((end.state, end.iteration), (Completed, 2));
}

#[test]
fn a_different_worker_prompt_shows_the_line_that_differs_and_goes_on_as_recorded() {
    let prompts =
        policy(r#"return { next_prompt = function(ctx) return ctx.task .. "\ntry harder" end }"#);
    let report = run(retry_then_done(), &prompts);
    let d = &report.differences[0];
    assert_eq!(d.hook, Hook::NextPrompt);
    assert_eq!(d.old, "line 2: (empty line)");
    assert_eq!(d.new, "line 2: try harder");
    let divergence = report.divergence.as_deref().unwrap();
    assert!(
        divergence.contains("the worker of iteration 2 gets another prompt, from line 2"),
        "{divergence}"
    );
    assert!(
        report.assumptions[0].starts_with(
            "from iteration 2 on, the worker's output is taken as \
                                           recorded"
        ),
        "{:?}",
        report.assumptions
    );
    assert_eq!(report.simulated_end.unwrap().state, Completed);
    assert_eq!(report.stopped, None);

    // The strict mode stops there, saying what was never recorded.
    let log = Log::decode(retry_then_done());
    let opts = ReplayOptions {
        stop_at_divergence: true,
    };
    let strict = replay_with(&log, &prompts, opts).unwrap();
    assert_eq!(strict.simulated_path.last(), Some(&WorkerExecuting));
    assert!(strict.assumptions.is_empty());
    assert!(
        strict
            .stopped
            .as_deref()
            .unwrap()
            .contains("never recorded"),
        "{:?}",
        strict.stopped
    );
    assert_eq!(strict.verdict, ReplayVerdict::Differs);
}

/// The issue's measure: a session recorded under the built-in policy, replayed under one that
/// says retry at iteration 1 and impossible at iteration 2, ends REJECTED at iteration 2 — where
/// a real run under that policy ends — though the recording never had an iteration 2.
#[test]
fn replay_answers_where_the_session_would_have_ended() {
    let recorded = record(
        PolicyHost::builtin(),
        [Run::Exit(0, "fixed"), Run::Exit(0, DONE)],
    );
    let source = r#"return { verdict = function(output, ctx)
        if ctx.iteration == 1 then return "retry", "add a test" end
        return "impossible", "needs a database" end }"#;
    let report = run(recorded, &policy(source));
    let end = report.simulated_end.clone().unwrap();
    assert_eq!((end.state, end.iteration), (Rejected, 2));
    assert_eq!(report.verdict, ReplayVerdict::Differs);
    assert_eq!(
        report.assumptions,
        [
            "from iteration 2 on, the worker's output is taken as recorded: iteration 1's run \
             stands in for iteration 2, never recorded",
            "from iteration 2 on, the auditor's output is taken as recorded: iteration 1's run \
             stands in for iteration 2, never recorded"
        ]
    );
    assert_eq!(
        report.divergence.as_deref(),
        Some("decision 7 (verdict, iteration 1): done: all tests pass → retry: add a test")
    );
    let table = report.render_table();
    assert!(
        table.contains(
            "verdict: differs: 1 decision(s) answered differently; under this policy the session \
             ends REJECTED at iteration 2 (recorded: COMPLETED at iteration 1)"
        ),
        "{table}"
    );
    // A real run of that policy over the same runs ends there too.
    let mut real = Driver::new(
        policy(source),
        "fix the parser",
        [
            Run::Exit(0, "fixed"),
            Run::Exit(0, DONE),
            Run::Exit(0, "fixed"),
            Run::Exit(0, DONE),
        ],
    );
    let o = real.run().unwrap();
    assert_eq!((o.state, real.session.iteration), (Rejected, 2));
    assert_eq!(real.trace(), report.simulated_path);
}

/// A limit alone changes the path: no recorded decision is answered otherwise, and the report
/// says so in one verdict (never "no decision differs" beside a divergence), naming the
/// transitions, not some unrelated hook.
#[test]
fn a_changed_limit_is_a_changed_path_not_a_changed_decision() {
    let report = run(
        retry_then_done(),
        &policy("return { limits = { max_iterations = 1 } }"),
    );
    assert!(report.differences.is_empty());
    assert_eq!(report.verdict, ReplayVerdict::Differs);
    let d = report.divergence.as_deref().unwrap();
    assert!(
        d.starts_with(
            "in REITERATION_PENDING at iteration 1: the recorded session went to \
                       WORKER_EXECUTING, under the new policy it goes to FAILED"
        ),
        "{d}"
    );
    let table = report.render_table();
    assert!(
        table.contains(
            "verdict: differs: no recorded decision gets another answer, but the path changes"
        ),
        "{table}"
    );
    assert_eq!(table.matches("verdict:").count(), 1, "{table}");
    // The same policy again: nothing differs, and the report says only that.
    let same = run(retry_then_done(), &PolicyHost::builtin());
    assert_eq!(same.verdict, ReplayVerdict::Same);
    assert!(!same.differs());
    assert!(
        same.render_table().contains(
            "verdict: no difference: every recorded decision gets the same answer and the \
             session ends the same, COMPLETED at iteration 2"
        ),
        "{}",
        same.render_table()
    );
}

#[test]
fn an_interrupted_and_resumed_session_replays_through_the_resume() {
    let mut d = Driver::new(
        PolicyHost::builtin(),
        "t",
        [
            Run::Interrupted("half"),
            Run::Exit(0, "done"),
            Run::Exit(0, DONE),
        ],
    );
    assert_eq!(d.run().unwrap().state, Interrupted);
    d.reload_from_disk();
    assert_eq!(d.run().unwrap().state, Completed);
    let report = run(lines(&d), &PolicyHost::builtin());
    assert_eq!(report.simulated_path, report.recorded_path);
    assert!(report.recorded_path.contains(&S::Interrupted));
    assert!(!report.differs(), "{report:#?}");
}

#[test]
fn a_crash_and_its_fencing_replay_too() {
    let mut d = Driver::new(
        PolicyHost::builtin(),
        "t",
        [Run::OneshotDies, Run::Exit(0, "fine"), Run::Exit(0, DONE)],
    );
    d.run();
    d.reload_from_disk();
    d.step(crate::session::Event::Start);
    d.drive(crate::session::Event::Fenced("gone".into()))
        .unwrap();
    let report = run(lines(&d), &PolicyHost::builtin());
    assert_eq!(report.simulated_path, report.recorded_path, "{report:#?}");
    assert_eq!(report.simulated_path.last(), Some(&Completed));
}

#[test]
fn malformed_records_name_their_position() {
    let mut values = retry_then_done();
    let at = values.iter().position(|r| r["type"] == "decision").unwrap();
    values[at]["input"]["ctx"] = json!("not a ctx");
    let err = replay(&Log::decode(values), &PolicyHost::builtin()).unwrap_err();
    assert!(
        matches!(err, ReplayError::Malformed { record, .. } if record == at + 1),
        "{err}"
    );
    assert!(
        err.to_string().contains(&format!("record {}", at + 1)),
        "{err}"
    );

    let bad_state =
        vec![json!({"ts": 1, "type": "state_change", "from": "NOWHERE", "to": "FAILED"})];
    assert!(matches!(
        replay(&Log::decode(bad_state), &PolicyHost::builtin()),
        Err(ReplayError::Malformed { record: 1, .. })
    ));
}

#[test]
fn unknown_records_and_fields_are_ignored() {
    let mut values = retry_then_done();
    values.insert(2, json!({"ts": 1, "type": "something_new", "x": 1}));
    for r in values.iter_mut() {
        r["extra_field"] = json!(true);
    }
    let report = run(values, &PolicyHost::builtin());
    assert!(
        report.differences.is_empty() && report.stopped.is_none(),
        "{report:#?}"
    );
    assert_eq!(report.simulated_path, report.recorded_path);
}

#[test]
fn render_table_snapshot() {
    let other = policy(
        r#"return {
             verdict = function(output, ctx) return "retry", "never good enough" end,
             next_prompt = function(ctx) return ctx.task .. "\n\nThe auditor said: " .. (ctx.critique or "") end,
           }"#,
    );
    let report = run(retry_then_done(), &other);
    insta::assert_snapshot!(report.render_table());
    let json = serde_json::to_value(&report).unwrap();
    for field in [
        "policy_hash",
        "decisions",
        "replayed",
        "differences",
        "errors",
        "incomplete",
        "recorded_path",
        "simulated_path",
        "divergence",
        "notes",
        "stopped",
        "complete",
    ] {
        assert!(json.get(field).is_some(), "--json keeps `{field}`");
    }
}

/// While the paths agree, the core asks the recorded questions in the recorded order.
#[test]
fn the_simulation_asks_what_the_recording_asked() {
    let values = retry_then_done();
    let rec = Recording::from_log(&Log::decode(values)).unwrap();
    let asked = super::simulate::decisions_of(&rec, &PolicyHost::builtin());
    let hooks: Vec<Hook> = asked;
    let recorded: Vec<Hook> = rec.decisions.iter().map(|d| d.hook).collect();
    assert_eq!(hooks, recorded);
}

/// The issue's promise, hook by hook and failure mode by failure mode: a session recorded
/// under the built-in policy (a crash that is salvaged, a retry, then done — every hook is
/// asked), replayed under a policy whose hook fails, takes exactly the path a real run under
/// that policy takes.
#[test]
fn replay_ends_where_a_real_run_ends_for_every_failing_hook() {
    let script = || {
        [
            Run::Exit(1, "crashed half way"),
            Run::Exit(0, "w"),
            Run::Exit(0, RETRY),
            Run::Exit(0, "w"),
            Run::Exit(0, DONE),
        ]
    };
    let recorded = {
        let mut d = Driver::new(
            crate::policy::PolicyHost::builtin(),
            "fix the parser",
            script(),
        );
        d.changes.push_back(vec!["src/parser.rs"]);
        assert_eq!(d.run().unwrap().state, Completed);
        lines(&d)
    };
    let guard =
        r#"guards = { ["AUDIT_PENDING -> AUDITOR_EXECUTING"] = function(ctx) error("boom") end }"#;
    let cases: Vec<(&str, String)> =
        vec![
        ("verdict errors", "verdict = function() error('boom') end".into()),
        ("verdict returns nonsense", "verdict = function() return 42 end".into()),
        ("salvage errors", "salvage = function() error('boom') end".into()),
        ("next_prompt errors", "next_prompt = function() error('boom') end".into()),
        ("audit_prompt errors", "audit_prompt = function() error('boom') end".into()),
        ("a guard errors (closed)", guard.into()),
        ("a guard errors, declared open", format!("on_error = {{ guard = 'open' }}, {guard}")),
        ("on_transition errors (open)", "on_transition = function() error('boom') end".into()),
        (
            "on_transition errors, declared closed",
            "on_error = { on_transition = 'closed' }, on_transition = function() error('boom') end"
                .into(),
        ),
    ];
    let mut ends = Vec::new();
    for (case, body) in cases {
        let source = format!("return {{ {body} }}");
        let mut real = Driver::new(policy(&source), "fix the parser", script());
        real.changes.push_back(vec!["src/parser.rs"]);
        let outcome = real.run().unwrap();
        let report = run(recorded.clone(), &policy(&source));
        assert_eq!(report.simulated_path, real.trace(), "{case}");
        assert_eq!(report.simulated_path.last(), Some(&outcome.state), "{case}");
        assert!(!report.errors.is_empty(), "{case}: the failure is reported");
        let table = report.render_table();
        assert!(!table.contains("no decision differs"), "{case}: {table}");
        ends.push(outcome.state);
    }
    // Open failures go on to COMPLETED, closed ones stop in FAILED: both kinds were tried.
    assert!(
        ends.contains(&Completed) && ends.contains(&Failed),
        "{ends:?}"
    );
}

/// The first auditor `exited` record of `values`, to edit.
fn first_audit_exit(values: &mut [Value]) -> &mut Value {
    values
        .iter_mut()
        .find(|v| v["type"] == "process" && v["role"] == "auditor" && v["event"] == "exited")
        .expect("an auditor exit")
}

#[test]
fn the_verdict_replays_from_the_recorded_stdout_and_older_logs_from_the_tail() {
    // Recorded: RETRY on stdout, a DONE on stderr that the verdict never saw.
    let mut values = retry_then_done();
    let exit = first_audit_exit(&mut values);
    exit["tail"] = json!(format!("{RETRY}\nVERDICT: DONE from stderr"));
    exit["stdout"] = json!(RETRY);
    let report = run(values.clone(), &PolicyHost::builtin());
    assert_eq!(report.simulated_path, report.recorded_path, "{report:#?}");
    assert!(report.divergence.is_none(), "{report:#?}");

    // A log without `stdout` is one whose verdict read `tail`: replay reads it too (here
    // the DONE, so the simulation completes one iteration early and says it diverged).
    first_audit_exit(&mut values)
        .as_object_mut()
        .unwrap()
        .remove("stdout");
    let report = run(values, &PolicyHost::builtin());
    assert!(report.divergence.is_some(), "{report:#?}");
    assert_eq!(report.simulated_path.last(), Some(&Completed));
}

/// Tool requests are facts and decisions both: replayed under a policy whose `permit` denies,
/// the recorded allow is a difference; under the same policy, nothing differs.
#[test]
fn a_permit_that_now_denies_is_a_difference() {
    let values = record(
        PolicyHost::builtin(),
        [Run::AsksBash("rm -rf build", "cleaned"), Run::Exit(0, DONE)],
    );
    let same = run(values.clone(), &PolicyHost::builtin());
    assert!(same.differences.is_empty(), "{same:#?}");
    let deny = policy(
        r#"return { permit = function(tool, input) if input.command:find("rm", 1, true) then return "deny", "no rm" end return "allow" end }"#,
    );
    let report = run(values, &deny);
    assert_eq!(report.differences.len(), 1, "{report:#?}");
    assert_eq!(report.differences[0].hook, Hook::Permit);
}
