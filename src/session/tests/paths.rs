//! Every path of seed 000 §2.2 and §3.2 through [`Session::step`], without processes or
//! clocks, plus the policy's ways of changing them (guards, failure modes, limits).

use super::script::{Driver, Run, policy};
use crate::machine::{Salvage, SessionState as S, Verdict};
use crate::policy::PolicyHost;
use crate::process::{Role, StopReason};
use crate::session::record::{ProcessEvent, Record};
use crate::session::{Effect, Event, Pause, Phase, Reason};

const DONE: &str = "VERDICT: DONE\nREASON: all good";
const RETRY: &str = "VERDICT: RETRY\nREASON: the tests fail";
const IMPOSSIBLE: &str = "VERDICT: IMPOSSIBLE\nREASON: needs a credit card";

fn builtin(runs: impl IntoIterator<Item = Run>) -> Driver {
    Driver::new(PolicyHost::builtin(), "fix the parser", runs)
}

fn last_reason(d: &Driver) -> Reason {
    d.session.last_reason().cloned().expect("a reason")
}

#[test]
fn created_run_journals_then_snapshots_then_spawns_the_worker() {
    let mut d = builtin([]);
    let effects = d.step(Event::Start);
    assert_eq!(d.session.state(), S::WorkerExecuting);
    assert_eq!(d.session.iteration, 1);
    assert_eq!(d.session.worker_prompt, "fix the parser");
    let journal = effects.iter().position(|e| *e == Effect::Journal).unwrap();
    let snapshot = effects.iter().position(|e| *e == Effect::Snapshot).unwrap();
    let spawn = effects
        .iter()
        .position(|e| matches!(e, Effect::Spawn(s) if s.role == Role::Worker && s.prompt == "fix the parser" && s.iteration == 1))
        .unwrap();
    assert!(journal < snapshot && snapshot < spawn, "{effects:#?}");
    assert!(matches!(&effects[0], Effect::Record(Record::Session(_))));
}

#[test]
fn worker_exit_zero_audits_and_done_completes() {
    let mut d = builtin([Run::Exit(0, "fixed"), Run::Exit(0, DONE)]);
    let outcome = d.run().unwrap();
    assert_eq!(
        d.trace(),
        [
            S::Created,
            S::WorkerExecuting,
            S::AuditPending,
            S::AuditorExecuting,
            S::Completed
        ]
    );
    assert_eq!(outcome.state, S::Completed);
    assert!(!outcome.paused);
    assert_eq!(d.session.worker_output, "fixed");
    assert!(matches!(
        last_reason(&d),
        Reason::Verdict { verdict: Verdict::Done, reason: Some(r) } if r == "all good"
    ));
    // The auditor got the built-in audit prompt, which quotes the task.
    let audit = d.records.iter().find_map(|r| match r {
        Record::Process(p) if p.role == Role::Auditor => match &p.event {
            ProcessEvent::Started { prompt, .. } => Some(prompt.clone()),
            _ => None,
        },
        _ => None,
    });
    assert!(audit.unwrap().contains("fix the parser"));
}

#[test]
fn retry_reiterates_with_the_critique_in_the_next_prompt() {
    let mut d = builtin([
        Run::Exit(0, "tried"),
        Run::Exit(0, RETRY),
        Run::Exit(0, "fixed"),
        Run::Exit(0, DONE),
    ]);
    d.run().unwrap();
    assert_eq!(
        d.trace(),
        [
            S::Created,
            S::WorkerExecuting,
            S::AuditPending,
            S::AuditorExecuting,
            S::ReiterationPending,
            S::WorkerExecuting,
            S::AuditPending,
            S::AuditorExecuting,
            S::Completed
        ]
    );
    assert_eq!(d.session.iteration, 2);
    assert!(d.session.worker_prompt.contains("the tests fail"));
    assert!(d.session.worker_prompt.contains("fix the parser"));
}

#[test]
fn impossible_rejects() {
    let mut d = builtin([Run::Exit(0, "hm"), Run::Exit(0, IMPOSSIBLE)]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Rejected);
}

#[test]
fn auditor_crash_fails() {
    let mut d = builtin([Run::Exit(0, "w"), Run::Exit(2, "boom")]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert_eq!(
        o.reason,
        Some(Reason::Exited {
            role: Role::Auditor,
            code: Some(2),
            signal: None
        })
    );
}

#[test]
fn auditor_inactivity_is_fatal() {
    let mut d = builtin([Run::Exit(0, "w"), Run::Silent("thinking")]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert_eq!(o.reason.unwrap().code(), "auditor_inactivity_timeout");
}

#[test]
fn worker_crash_with_changes_is_partial_and_runs_again() {
    let mut d = builtin([
        Run::Exit(1, "oops"),
        Run::Exit(0, "fixed"),
        Run::Exit(0, DONE),
    ]);
    d.changes.push_back(vec!["src/a.rs"]);
    d.run().unwrap();
    assert_eq!(
        &d.trace()[..5],
        [
            S::Created,
            S::WorkerExecuting,
            S::RecoveryPending,
            S::ReiterationPending,
            S::WorkerExecuting
        ]
    );
    assert_eq!(d.session.iteration, 2, "a crash costs an iteration");
    assert_eq!(d.session.state(), S::Completed);
    let recovery = &d.session.history[2];
    assert_eq!(
        recovery.reason,
        Some(Reason::Exited {
            role: Role::Worker,
            code: Some(1),
            signal: None
        })
    );
}

#[test]
fn worker_crash_without_changes_fails() {
    let mut d = builtin([Run::Exit(1, "oops")]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert!(matches!(
        o.reason,
        Some(Reason::Salvaged {
            salvage: Salvage::Nothing,
            ..
        })
    ));
}

#[test]
fn worker_inactivity_stops_it_journaled_first_then_recovers() {
    let mut d = builtin([Run::Silent("half done")]);
    d.changes.push_back(vec!["a.txt"]);
    d.step(Event::Start);
    let pid = crate::process::ProcessIdentity {
        pid: 9,
        pgid: 9,
        start_time: None,
    };
    d.step(Event::Spawned(pid));
    let effects = d.step(Event::TimedOut(StopReason::InactivityTimeout));
    let journal = effects.iter().position(|e| *e == Effect::Journal).unwrap();
    let stop = effects
        .iter()
        .position(|e| matches!(e, Effect::Stop { .. }))
        .unwrap();
    assert!(journal < stop);
    assert_eq!(
        d.session.phase.run().unwrap().stopping,
        Some(StopReason::InactivityTimeout)
    );
    // A second timer while stopping changes nothing.
    assert!(
        d.step(Event::TimedOut(StopReason::WorkerTimeout))
            .is_empty()
    );
    let effects = d.step(Event::Exited {
        exit: crate::session::ExitStatus {
            code: None,
            signal: Some(15),
        },
        tail: "half done".into(),
        stdout: "half done".into(),
    });
    assert!(effects.iter().any(|e| matches!(
        e,
        Effect::Inspect {
            reason: Some(StopReason::InactivityTimeout),
            ..
        }
    )));
    let ev = crate::process::Evidence {
        reason: Some(StopReason::InactivityTimeout),
        changed_files: vec!["a.txt".into()],
        ..Default::default()
    };
    d.step(Event::Inspected(ev));
    assert_eq!(
        d.session.history[2].reason.as_ref().unwrap().code(),
        "inactivity_timeout"
    );
    // Built-in salvage keeps the changed file: partial, a new iteration.
    assert_eq!(d.session.state(), S::WorkerExecuting);
    assert_eq!(d.session.iteration, 2);
}

#[test]
fn recovery_success_goes_to_audit() {
    let p =
        policy(r#"return { salvage = function(e, ctx) return "success", "it is all there" end }"#);
    let mut d = Driver::new(p, "t", [Run::Exit(3, "crashed late"), Run::Exit(0, DONE)]);
    d.run().unwrap();
    assert_eq!(
        d.trace(),
        [
            S::Created,
            S::WorkerExecuting,
            S::RecoveryPending,
            S::AuditPending,
            S::AuditorExecuting,
            S::Completed
        ]
    );
}

#[test]
fn max_iterations_fails_at_reiteration_pending() {
    let p = policy("return { limits = { max_iterations = 2 } }");
    let mut d = Driver::new(
        p,
        "t",
        [
            Run::Exit(0, "a"),
            Run::Exit(0, RETRY),
            Run::Exit(0, "b"),
            Run::Exit(0, RETRY),
        ],
    );
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert_eq!(o.reason, Some(Reason::MaxIterations { max: 2 }));
    assert_eq!(d.trace()[d.trace().len() - 2], S::ReiterationPending);
}

#[test]
fn ctrl_c_stops_the_worker_gracefully_and_a_second_one_kills() {
    let mut d = builtin([]);
    d.step(Event::Start);
    d.step(Event::Spawned(crate::process::ProcessIdentity {
        pid: 5,
        pgid: 5,
        start_time: None,
    }));
    let first = d.step(Event::Interrupt);
    assert!(first.iter().any(|e| matches!(e, Effect::Stop { .. })));
    assert!(!first.contains(&Effect::Kill));
    let second = d.step(Event::Interrupt);
    assert!(second.contains(&Effect::Kill));
    let o = d.step(Event::Exited {
        exit: crate::session::ExitStatus {
            code: None,
            signal: Some(9),
        },
        tail: String::new(),
        stdout: String::new(),
    });
    assert_eq!(
        d.session.phase,
        Phase::Interrupted(Pause {
            during: Role::Worker,
            cause: StopReason::Interrupted,
            retake: None,
        })
    );
    assert!(
        o.iter()
            .any(|e| matches!(e, Effect::Finish(o) if o.paused && !o.state.is_terminal()))
    );
}

#[test]
fn resuming_an_interrupted_worker_inspects_and_reruns_the_same_iteration() {
    let mut d = builtin([
        Run::Interrupted("half"),
        Run::Exit(0, "done"),
        Run::Exit(0, DONE),
    ]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Interrupted);
    d.reload_from_disk();
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Completed);
    assert_eq!(
        d.trace(),
        [
            S::Created,
            S::WorkerExecuting,
            S::Interrupted,
            S::RecoveryPending,
            S::ReiterationPending,
            S::WorkerExecuting,
            S::AuditPending,
            S::AuditorExecuting,
            S::Completed
        ]
    );
    assert_eq!(d.session.iteration, 1, "a pause costs no iteration");
    assert_eq!(
        d.session.history[3].reason,
        Some(Reason::Resumed {
            after: StopReason::Interrupted
        })
    );
    assert_eq!(d.session.history[5].reason, Some(Reason::Rerun));
}

#[test]
fn resuming_an_interrupted_auditor_audits_again() {
    let mut d = builtin([Run::Exit(0, "w"), Run::Interrupted(""), Run::Exit(0, DONE)]);
    assert_eq!(d.run().unwrap().state, S::Interrupted);
    d.reload_from_disk();
    assert_eq!(d.run().unwrap().state, S::Completed);
    assert_eq!(
        &d.trace()[3..],
        [
            S::AuditorExecuting,
            S::Interrupted,
            S::AuditPending,
            S::AuditorExecuting,
            S::Completed
        ]
    );
}

#[test]
fn oneshot_dying_mid_run_is_fenced_and_resumed_as_a_pause() {
    let mut d = builtin([Run::OneshotDies, Run::Exit(0, "fine"), Run::Exit(0, DONE)]);
    assert_eq!(d.run(), None);
    assert_eq!(d.session.state(), S::WorkerExecuting);
    d.reload_from_disk();
    let effects = d.step(Event::Start);
    let journal = effects.iter().position(|e| *e == Effect::Journal).unwrap();
    let fence = effects
        .iter()
        .position(|e| matches!(e, Effect::Fence { .. }))
        .expect("the dead run's group is fenced");
    assert!(journal < fence);
    let o = d
        .drive(Event::Fenced("process group 101 was already gone".into()))
        .unwrap();
    assert_eq!(o.state, S::Completed);
    assert_eq!(
        d.session.history[2].reason,
        Some(Reason::OneshotDied { role: Role::Worker })
    );
    assert_eq!(d.session.iteration, 1);
}

#[test]
fn a_stop_journaled_before_a_crash_resumes_as_that_stop() {
    let mut d = builtin([Run::Exit(0, "ok"), Run::Exit(0, DONE)]);
    d.step(Event::Start);
    d.step(Event::Spawned(crate::process::ProcessIdentity {
        pid: 5,
        pgid: 5,
        start_time: None,
    }));
    d.step(Event::TimedOut(StopReason::InactivityTimeout));
    // oneshot dies here, mid-stop.
    d.reload_from_disk();
    d.step(Event::Start);
    d.changes.push_back(vec!["kept.txt"]);
    d.drive(Event::Fenced("killed the group".into())).unwrap();
    assert_eq!(
        d.session.history[2].reason.as_ref().unwrap().code(),
        "inactivity_timeout"
    );
    assert_eq!(d.session.iteration, 2, "a timeout is not a pause");
}

#[test]
fn an_interrupt_between_processes_pauses_at_the_checkpoint() {
    let mut d = builtin([Run::Exit(0, "w")]);
    d.step(Event::Start);
    d.step(Event::Spawned(crate::process::ProcessIdentity {
        pid: 5,
        pgid: 5,
        start_time: None,
    }));
    d.step(Event::Exited {
        exit: crate::session::ExitStatus {
            code: Some(0),
            signal: None,
        },
        tail: "w".into(),
        stdout: "w".into(),
    });
    // The interrupt lands while the worker's leftovers are being inspected.
    assert!(!d.step(Event::Interrupt).iter().any(Effect::is_act));
    let effects = d.step(Event::Inspected(Default::default()));
    assert_eq!(d.session.state(), S::AuditPending);
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Finish(o) if o.paused && o.state == S::AuditPending))
    );
    assert!(!effects.iter().any(Effect::is_act));
}

#[test]
fn a_worker_that_cannot_start_is_recovered_and_fails() {
    let mut d = builtin([Run::SpawnFails]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert!(matches!(
        &d.session.history[2].reason,
        Some(Reason::SpawnFailed {
            role: Role::Worker,
            ..
        })
    ));
}

#[test]
fn an_auditor_that_cannot_start_fails() {
    let mut d = builtin([Run::Exit(0, "w"), Run::SpawnFails]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert_eq!(o.reason.unwrap().code(), "spawn_failed");
}

#[test]
fn a_guard_veto_fails_the_session_with_the_policy_reason() {
    let p = policy(
        r#"return { guards = { ["AUDIT_PENDING -> AUDITOR_EXECUTING"] = function(ctx) return false, "no audits on fridays" end } }"#,
    );
    let mut d = Driver::new(p, "t", [Run::Exit(0, "w")]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert_eq!(
        o.reason,
        Some(Reason::GuardVeto {
            from: S::AuditPending,
            to: S::AuditorExecuting,
            why: "no audits on fridays".into()
        })
    );
}

#[test]
fn a_failing_verdict_hook_fails_closed_with_file_and_line() {
    let p = policy("return { verdict = function(o, ctx)\n error('bad') end }");
    let mut d = Driver::new(p, "t", [Run::Exit(0, "w"), Run::Exit(0, DONE)]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    match o.reason.unwrap() {
        Reason::PolicyError { hook, message, .. } => {
            assert_eq!(hook, "verdict");
            assert!(message.contains("test.lua:2"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failing_observer_fails_open_and_the_session_completes() {
    let p = policy(r#"return { on_transition = function(f, t, ctx) error("boom") end }"#);
    let mut d = Driver::new(p, "t", [Run::Exit(0, "w"), Run::Exit(0, DONE)]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Completed);
    let warnings = d
        .records
        .iter()
        .filter(|r| matches!(r, Record::Warning(_)))
        .count();
    assert_eq!(warnings, 4, "one per transition");
}

#[test]
fn an_observer_declared_closed_fails_the_session() {
    let p = policy(
        r#"return { on_error = { on_transition = "closed" }, on_transition = function(f, t, ctx) error("boom") end }"#,
    );
    let mut d = Driver::new(p, "t", [Run::Exit(0, "w")]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert_eq!(d.trace(), [S::Created, S::WorkerExecuting, S::Failed]);
    assert_eq!(o.reason.unwrap().code(), "policy_error");
}

#[test]
fn a_guard_declared_open_lets_the_transition_happen() {
    let p = policy(
        r#"return { on_error = { guard = "open" }, guards = { ["CREATED -> WORKER_EXECUTING"] = function(ctx) error("broken guard") end } }"#,
    );
    let mut d = Driver::new(p, "t", [Run::Exit(0, "w"), Run::Exit(0, DONE)]);
    assert_eq!(d.run().unwrap().state, S::Completed);
}

#[test]
fn a_terminal_session_started_again_only_finishes() {
    let mut d = builtin([Run::Exit(0, "w"), Run::Exit(0, IMPOSSIBLE)]);
    d.run().unwrap();
    let before = d.session.history.len();
    let effects = d.step(Event::Start);
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Finish(o) if o.state == S::Rejected))
    );
    assert_eq!(d.session.history.len(), before);
    assert!(!effects.iter().any(Effect::is_act));
}

#[test]
fn a_partial_salvage_after_a_pause_reruns_without_a_prompt_or_budget_check() {
    let p = policy("return { limits = { max_iterations = 1 } }");
    let mut d = Driver::new(
        p,
        "t",
        [Run::Interrupted(""), Run::Exit(0, "w"), Run::Exit(0, DONE)],
    );
    d.run().unwrap();
    d.reload_from_disk();
    assert_eq!(d.run().unwrap().state, S::Completed);
    assert_eq!(d.session.history[4].state, S::ReiterationPending);
    assert_eq!(d.session.history[5].reason, Some(Reason::Rerun));
    assert_eq!(d.session.phase, Phase::Completed);
}

#[test]
fn a_policy_change_applies_its_iteration_budget() {
    let mut d = builtin([Run::Exit(0, "w"), Run::Exit(0, RETRY)]);
    d.step(Event::Start);
    d.policy = policy("return { limits = { max_iterations = 1 } }");
    let effects = d.step(Event::PolicyChanged);
    assert!(effects.contains(&Effect::Journal));
    assert_eq!(d.session.max_iterations, 1);
}

#[test]
fn exits_and_inspections_out_of_place_are_ignored_with_a_warning() {
    let mut d = builtin([]);
    let effects = d.step(Event::Inspected(Default::default()));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Record(Record::Warning(_))))
    );
    assert_eq!(d.session.state(), S::Created);
    let effects = d.step(Event::Exited {
        exit: Default::default(),
        tail: String::new(),
        stdout: String::new(),
    });
    assert!(!effects.iter().any(Effect::is_act));
    assert_eq!(d.session.state(), S::Created);
}
