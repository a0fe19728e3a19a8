//! Seed 001's matrix, row by row; every other (state, trigger) refused; random sequences never
//! leave the table; the legacy names migrate as the seed says.

use super::*;
use JobState as S;
use JobTrigger as T;

/// The seed's matrix (with the issues' RECOVERING → INTERVENTION_REQUIRED and the rows of
/// `land`), written out once more, independently of `next`: each row is checked, and nothing
/// else may be legal.
const MATRIX: [(JobState, JobTrigger, JobState); 28] = [
    (S::Draft, T::Activate, S::Pending),
    (S::Draft, T::Suspend, S::Suspended),
    (S::Draft, T::Cancel, S::Canceled),
    (S::Pending, T::Step, S::Provisioning),
    (S::Pending, T::Suspend, S::Suspended),
    (S::Pending, T::Cancel, S::Canceled),
    (S::Provisioning, T::Provisioned, S::Executing),
    (S::Provisioning, T::ProvisionFailed, S::InterventionRequired),
    (S::Provisioning, T::Cancel, S::Canceled),
    (S::Executing, T::Completed, S::Harvesting),
    (S::Executing, T::TimedOut, S::Recovering),
    (S::Executing, T::Cancel, S::Canceled),
    (S::Recovering, T::Recovered, S::Executing),
    (S::Recovering, T::RecoveryFailed, S::InterventionRequired),
    (S::Harvesting, T::Harvested(Harvest::Success), S::Success),
    (
        S::Harvesting,
        T::Harvested(Harvest::ApprovalRequired),
        S::ApprovalRequired,
    ),
    (
        S::Harvesting,
        T::Harvested(Harvest::InterventionRequired),
        S::InterventionRequired,
    ),
    (S::InterventionRequired, T::Resubmit, S::Pending),
    (S::InterventionRequired, T::Cancel, S::Canceled),
    (S::ApprovalRequired, T::Approve, S::Success),
    (S::ApprovalRequired, T::Reject, S::Pending),
    (S::ApprovalRequired, T::Cancel, S::Canceled),
    (S::Suspended, T::Resume, S::Pending),
    (S::Suspended, T::Cancel, S::Canceled),
    // Issue 22: a SUCCESS job's work lands (no move), or the land fails and a human fixes it.
    (S::Success, T::Land, S::Success),
    (S::Success, T::LandFailed, S::InterventionRequired),
    (S::InterventionRequired, T::Land, S::Success),
    (
        S::InterventionRequired,
        T::LandFailed,
        S::InterventionRequired,
    ),
];

#[test]
fn every_row_of_the_matrix_moves_as_the_seed_says() {
    for (from, trigger, to) in MATRIX {
        assert_eq!(next(from, trigger), Ok(to), "{from} --{trigger}-->");
    }
}

#[test]
fn every_pair_off_the_matrix_is_refused_naming_what_is_allowed() {
    let mut legal = 0;
    for state in JobState::ALL {
        for trigger in JobTrigger::ALL {
            let row = MATRIX.iter().find(|(f, t, _)| *f == state && *t == trigger);
            match (row, next(state, trigger)) {
                (Some(_), Ok(_)) => legal += 1,
                (None, Err(refused)) => {
                    assert_eq!(refused, Refused { state, trigger });
                    let text = refused.to_string();
                    assert!(
                        text.starts_with(&format!("{trigger} is not allowed in {state}")),
                        "{text}"
                    );
                }
                (row, got) => panic!("{state} --{trigger}--> {got:?}, the matrix says {row:?}"),
            }
        }
    }
    assert_eq!(legal, MATRIX.len());
    let text = next(S::Success, T::Cancel).unwrap_err().to_string();
    assert_eq!(
        text,
        "cancel is not allowed in SUCCESS; SUCCESS is terminal; it allows only: land"
    );
    let text = next(S::Canceled, T::Land).unwrap_err().to_string();
    assert_eq!(
        text,
        "land is not allowed in CANCELED; CANCELED is terminal"
    );
    let text = next(S::Harvesting, T::Cancel).unwrap_err().to_string();
    assert!(text.contains("only the runner moves it"), "{text}");
    let text = next(S::ApprovalRequired, T::Resubmit)
        .unwrap_err()
        .to_string();
    assert!(
        text.ends_with("APPROVAL_REQUIRED allows: approve, reject, cancel"),
        "{text}"
    );
}

#[test]
fn resting_transient_and_terminal_states_are_the_seeds() {
    let transient: Vec<_> = JobState::ALL
        .into_iter()
        .filter(|s| !s.is_resting())
        .collect();
    assert_eq!(
        transient,
        [S::Provisioning, S::Executing, S::Recovering, S::Harvesting]
    );
    let terminal: Vec<_> = JobState::ALL
        .into_iter()
        .filter(|s| s.is_terminal())
        .collect();
    assert_eq!(terminal, [S::Success, S::Canceled]);
    for s in JobState::ALL {
        // Terminal: nothing steps the job again; SUCCESS only lands (or fails to).
        let landing = [T::Land, T::LandFailed];
        let moves: Vec<_> = allowed(s)
            .into_iter()
            .filter(|t| !landing.contains(t))
            .collect();
        assert_eq!(s.is_terminal(), moves.is_empty(), "{s}");
        // A human's verbs only apply where the job waits; transient states move by the
        // runner alone — but for cancel, which stops a running step.
        if !s.is_resting() {
            assert!(
                allowed(s).iter().all(|t| !t.is_verb() || *t == T::Cancel),
                "{s}"
            );
        }
    }
    assert!(S::ApprovalRequired.awaits_human() && !S::Pending.awaits_human());
}

#[test]
fn names_round_trip_and_unknown_ones_list_the_states() {
    for s in JobState::ALL {
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, format!("\"{}\"", s.as_str()));
        assert_eq!(serde_json::from_str::<JobState>(&json).unwrap(), s);
        assert_eq!(s.as_str().to_lowercase().parse::<JobState>().unwrap(), s);
    }
    let e = "RUNING".parse::<JobState>().unwrap_err().to_string();
    assert!(
        e.contains("unknown job state \"RUNING\"") && e.contains("APPROVAL_REQUIRED"),
        "{e}"
    );
}

#[test]
fn legacy_states_migrate_as_the_seed_says_and_the_move_is_returned() {
    for (name, stuck, to) in [
        ("RUNNING", false, S::Executing),
        ("RUNNING", true, S::InterventionRequired),
        ("REVIEW_REQUIRED", false, S::InterventionRequired),
        ("reviewing", false, S::InterventionRequired),
        ("PAUSED", false, S::Suspended),
    ] {
        let (state, m) = migrate(name, stuck).unwrap();
        assert_eq!(state, to, "{name}");
        let m = m.expect("recorded");
        assert_eq!((m.from.as_str(), m.to), (name, to));
        assert!(!m.why.is_empty());
    }
    assert_eq!(migrate("PENDING", false).unwrap(), (S::Pending, None));
    assert!(migrate("LOST", false).is_err());
}

mod random_sequences {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// From DRAFT, any sequence of triggers: each accepted move is a matrix row, a refused
        /// one changes nothing, a terminal state is never left but by a land that failed, and
        /// SUCCESS is only reached through HARVESTING, APPROVAL_REQUIRED, or a land.
        #[test]
        fn never_leave_the_table(picks in proptest::collection::vec(0..JobTrigger::ALL.len(), 0..64)) {
            let mut state = S::Draft;
            for i in picks {
                let trigger = JobTrigger::ALL[i];
                match next(state, trigger) {
                    Ok(to) => {
                        prop_assert!(MATRIX.contains(&(state, trigger, to)));
                        prop_assert!(!state.is_terminal() || trigger == T::LandFailed || to == state);
                        if to == S::Success && state != S::Success {
                            prop_assert!(
                                matches!(state, S::Harvesting | S::ApprovalRequired)
                                    || trigger == T::Land
                            );
                        }
                        state = to;
                    }
                    Err(r) => prop_assert_eq!(r.state, state),
                }
            }
        }
    }
}
