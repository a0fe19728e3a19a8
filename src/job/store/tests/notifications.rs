//! The record of each notification (`crate::notify`): claimed once per (job, kind, cause) —
//! of several claims of one event only the first takes effect, also from many threads at
//! once — its outcome written back, and listed per job or for all, oldest first.

use super::*;
use crate::job::store::{NotificationRecord, NotifyOutcome, NotifyStatus};

on_both_stores!(
    a_notification_is_claimed_once_and_its_outcome_written_back,
    of_many_concurrent_claims_of_one_event_exactly_one_takes_effect,
    an_outcome_for_a_notification_never_claimed_is_refused,
);

fn record(job: &str, kind: &str, cause: &str, sender: &str) -> NotificationRecord {
    NotificationRecord {
        job: job.to_string(),
        kind: kind.to_string(),
        cause: cause.to_string(),
        event: serde_json::json!({"kind": kind, "job": job, "cause": cause}),
        sender: sender.to_string(),
        created_ms: 1,
        status: NotifyStatus::Sent,
        attempts: 9,
        error: Some("not this".into()),
        updated_ms: 1,
    }
}

fn a_notification_is_claimed_once_and_its_outcome_written_back(s: &dyn JobStore) {
    add(s, "job-00000001", JobState::ApprovalRequired, 1);
    add(s, "job-00000002", JobState::InterventionRequired, 1);
    let first = record("job-00000001", "approval_pending", "transition 4", "r1");
    assert!(
        at(s, 5_000).claim_notification(&sealed(&first)).unwrap(),
        "the first claim takes effect"
    );
    let again = record("job-00000001", "approval_pending", "transition 4", "r2");
    assert!(
        !at(s, 6_000).claim_notification(&sealed(&again)).unwrap(),
        "a second claim of the same event does not"
    );
    // Another cause, another kind, another job: each its own event.
    for (job, kind, cause) in [
        ("job-00000001", "approval_pending", "transition 9"),
        ("job-00000001", "budget_80", "transition 4"),
        ("job-00000002", "approval_pending", "transition 4"),
    ] {
        assert!(
            at(s, 7_000)
                .claim_notification(&sealed(&record(job, kind, cause, "r2")))
                .unwrap(),
            "{job} {kind} {cause}"
        );
    }
    let mine = s.notifications(Some("job-00000001")).unwrap();
    assert_eq!(mine.len(), 3);
    let n = &mine[0];
    assert_eq!(
        (
            n.cause.as_str(),
            n.sender.as_str(),
            n.created_ms,
            n.updated_ms
        ),
        ("transition 4", "r1", 5_000, 5_000),
        "the first claimer's, at the store's now"
    );
    assert_eq!(
        (n.status, n.attempts, n.error.as_deref()),
        (NotifyStatus::Sending, 0, None),
        "a claim is sending, whatever the record said"
    );
    assert_eq!(n.event["cause"], "transition 4");

    let outcome = NotifyOutcome {
        job: "job-00000001".into(),
        kind: "approval_pending".into(),
        cause: "transition 4".into(),
        status: NotifyStatus::Failed,
        attempts: 3,
        error: Some("sink 1 failed 3 times".into()),
    };
    at(s, 8_000)
        .notification_outcome(&sealed(&outcome))
        .unwrap();
    let n = &s.notifications(Some("job-00000001")).unwrap()[0];
    assert_eq!(
        (n.status, n.attempts, n.error.as_deref(), n.updated_ms),
        (
            NotifyStatus::Failed,
            3,
            Some("sink 1 failed 3 times"),
            8_000
        )
    );
    assert_eq!(n.created_ms, 5_000, "the claim's time stays");
    let all = s.notifications(None).unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(all.last().unwrap().job, "job-00000002");
    assert!(s.notifications(Some("job-99999999")).unwrap().is_empty());
}

fn of_many_concurrent_claims_of_one_event_exactly_one_takes_effect(s: &dyn JobStore) {
    add(s, "job-00000001", JobState::ApprovalRequired, 1);
    let won = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for n in 0..8 {
            let won = &won;
            scope.spawn(move || {
                let r = record(
                    "job-00000001",
                    "approval_pending",
                    "transition 2",
                    &format!("r{n}"),
                );
                if s.claim_notification(&sealed(&r)).unwrap() {
                    won.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(won.into_inner(), 1);
    assert_eq!(s.notifications(None).unwrap().len(), 1);
}

fn an_outcome_for_a_notification_never_claimed_is_refused(s: &dyn JobStore) {
    add(s, "job-00000001", JobState::ApprovalRequired, 1);
    let outcome = NotifyOutcome {
        job: "job-00000001".into(),
        kind: "approval_pending".into(),
        cause: "transition 2".into(),
        status: NotifyStatus::Sent,
        attempts: 1,
        error: None,
    };
    let e = s.notification_outcome(&sealed(&outcome)).unwrap_err();
    assert!(matches!(e, JobStoreError::NotFound { .. }), "{e}");
    assert!(s.notifications(None).unwrap().is_empty());
}
