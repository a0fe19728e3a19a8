//! Every row of the table is a test; a property test checks that no trigger sequence escapes it.

use super::*;
use SessionState as S;
use Trigger as T;
use proptest::prelude::*;

fn ok(from: S, ev: T, to: S) {
    assert_eq!(next(from, ev), Ok(to), "{from} --{ev:?}--> {to}");
}

#[test]
fn created_run_starts_worker() {
    ok(S::Created, T::Run, S::WorkerExecuting);
}

#[test]
fn worker_exit_zero_goes_to_audit() {
    ok(S::WorkerExecuting, T::ExitedOk, S::AuditPending);
}

#[test]
fn worker_inactivity_goes_to_recovery() {
    ok(S::WorkerExecuting, T::Timeout, S::RecoveryPending);
}

#[test]
fn worker_crash_goes_to_recovery() {
    ok(S::WorkerExecuting, T::ExitedErr, S::RecoveryPending);
}

#[test]
fn worker_interrupt_pauses() {
    ok(S::WorkerExecuting, T::Interrupt, S::Interrupted);
}

#[test]
fn recovery_success_goes_to_audit() {
    ok(
        S::RecoveryPending,
        T::Salvaged(Salvage::Success),
        S::AuditPending,
    );
}

#[test]
fn recovery_partial_goes_to_reiteration() {
    ok(
        S::RecoveryPending,
        T::Salvaged(Salvage::Partial),
        S::ReiterationPending,
    );
}

#[test]
fn recovery_nothing_fails() {
    ok(S::RecoveryPending, T::Salvaged(Salvage::Nothing), S::Failed);
}

#[test]
fn audit_pending_next_starts_auditor() {
    ok(S::AuditPending, T::Next, S::AuditorExecuting);
}

#[test]
fn auditor_done_completes() {
    ok(S::AuditorExecuting, T::Verdict(Verdict::Done), S::Completed);
}

#[test]
fn auditor_retry_reiterates() {
    ok(
        S::AuditorExecuting,
        T::Verdict(Verdict::Retry),
        S::ReiterationPending,
    );
}

#[test]
fn auditor_impossible_rejects() {
    ok(
        S::AuditorExecuting,
        T::Verdict(Verdict::Impossible),
        S::Rejected,
    );
}

#[test]
fn auditor_crash_fails() {
    ok(S::AuditorExecuting, T::ExitedErr, S::Failed);
}

#[test]
fn auditor_interrupt_pauses() {
    ok(S::AuditorExecuting, T::Interrupt, S::Interrupted);
}

#[test]
fn auditor_inactivity_is_fatal() {
    ok(S::AuditorExecuting, T::Timeout, S::Failed);
}

#[test]
fn reiteration_next_starts_worker() {
    ok(S::ReiterationPending, T::Next, S::WorkerExecuting);
}

#[test]
fn reiteration_max_iterations_fails() {
    ok(S::ReiterationPending, T::MaxIterations, S::Failed);
}

#[test]
fn resume_interrupted_worker_recovers() {
    ok(
        S::Interrupted,
        T::Resume {
            last_active: S::WorkerExecuting,
        },
        S::RecoveryPending,
    );
}

#[test]
fn resume_interrupted_auditor_reaudits() {
    ok(
        S::Interrupted,
        T::Resume {
            last_active: S::AuditorExecuting,
        },
        S::AuditPending,
    );
    ok(
        S::Interrupted,
        T::Resume {
            last_active: S::AuditPending,
        },
        S::AuditPending,
    );
}

#[test]
fn abort_fails_every_live_state_and_no_terminal_one() {
    for s in S::ALL {
        if s.is_terminal() {
            assert!(next(s, T::Abort).is_err(), "{s} must not be left");
        } else {
            ok(s, T::Abort, S::Failed);
        }
    }
}

#[test]
fn only_failed_and_interrupted_are_taken_up_again_and_only_into_a_live_state() {
    for to in S::ALL {
        for from in S::ALL {
            let r = next(from, T::Retake { to });
            let live = !to.is_terminal();
            if (from == S::Failed && live) || (from == S::Interrupted && live && to != from) {
                assert_eq!(r, Ok(to));
            } else {
                assert!(r.is_err(), "{from} -> {to}");
            }
        }
    }
}

#[test]
fn an_interrupted_hook_pauses_every_live_state_but_a_paused_one() {
    for s in S::ALL {
        if s.is_terminal() || s == S::Interrupted {
            assert!(next(s, T::HookInterrupted).is_err(), "{s}");
        } else {
            ok(s, T::HookInterrupted, S::Interrupted);
        }
    }
}

#[test]
fn exit_zero_of_the_auditor_needs_a_verdict() {
    assert_eq!(
        next(S::AuditorExecuting, T::ExitedOk),
        Err(Illegal {
            state: S::AuditorExecuting,
            trigger: T::ExitedOk
        })
    );
}

#[test]
fn rejected_cannot_be_resumed() {
    for last in S::ALL {
        assert!(
            next(S::Rejected, T::Resume { last_active: last }).is_err(),
            "{last}"
        );
    }
}

#[test]
fn state_names_round_trip() {
    for s in S::ALL {
        assert_eq!(s.as_str().parse::<S>().unwrap(), s);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, format!("\"{}\"", s.as_str()));
    }
    assert!("WORKER_RUNNING".parse::<S>().is_err());
}

fn any_event() -> impl Strategy<Value = Trigger> {
    let state = proptest::sample::select(S::ALL.to_vec());
    prop_oneof![
        Just(T::Run),
        Just(T::ExitedOk),
        Just(T::ExitedErr),
        Just(T::Timeout),
        Just(T::Interrupt),
        Just(T::Next),
        Just(T::MaxIterations),
        Just(T::Abort),
        Just(T::HookInterrupted),
        proptest::sample::select(vec![Salvage::Success, Salvage::Partial, Salvage::Nothing])
            .prop_map(T::Salvaged),
        proptest::sample::select(vec![Verdict::Done, Verdict::Retry, Verdict::Impossible])
            .prop_map(T::Verdict),
        state
            .clone()
            .prop_map(|last_active| T::Resume { last_active }),
        state.prop_map(|to| T::Retake { to }),
    ]
}

/// The exact set of (from, to) edges the seed allows, including the resume and abort rows.
fn allowed_edge(from: S, to: S) -> bool {
    matches!(
        (from, to),
        (S::Created, S::WorkerExecuting)
            | (
                S::WorkerExecuting,
                S::AuditPending | S::RecoveryPending | S::Interrupted
            )
            | (
                S::RecoveryPending,
                S::AuditPending | S::ReiterationPending | S::Failed
            )
            | (S::AuditPending, S::AuditorExecuting)
            | (
                S::AuditorExecuting,
                S::Completed | S::ReiterationPending | S::Rejected | S::Failed | S::Interrupted
            )
            | (S::ReiterationPending, S::WorkerExecuting | S::Failed)
            | (S::Interrupted, S::RecoveryPending | S::AuditPending)
    ) || (to == S::Failed && !from.is_terminal())
        || (from == S::Failed && !to.is_terminal())
        // A hook the user interrupted: a pause anywhere live, and back on resume.
        || (to == S::Interrupted && !from.is_terminal())
        || (from == S::Interrupted && !to.is_terminal())
}

proptest! {
    /// Whatever events arrive, the machine only moves along edges of the table, never leaves a
    /// terminal state but FAILED (taken up again after a policy error), and refuses everything
    /// else with a typed error naming the state.
    #[test]
    fn no_sequence_escapes_the_table(events in proptest::collection::vec(any_event(), 0..64)) {
        let mut state = S::Created;
        for ev in events {
            match next(state, ev) {
                Ok(to) => {
                    prop_assert!(allowed_edge(state, to), "{state} -> {to} via {ev:?}");
                    let retake = matches!(ev, T::Retake { .. });
                    prop_assert!(!state.is_terminal() || retake, "{state} left via {ev:?}");
                    state = to;
                }
                Err(e) => {
                    prop_assert_eq!(e.state, state);
                    prop_assert_eq!(e.trigger, ev);
                }
            }
        }
    }
}
