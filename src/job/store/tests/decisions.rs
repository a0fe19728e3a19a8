//! The store's decision records and its work signal: numbered per job under the lease, an
//! older file brought up to the schema that keeps them, new work waking a waiting runner.

use super::*;

on_both_stores!(new_work_wakes_a_waiting_runner_and_decisions_append_under_the_lease,);

fn new_work_wakes_a_waiting_runner_and_decisions_append_under_the_lease(s: &dyn JobStore) {
    let since = s.work_seen();
    add(s, "job-00000077", JobState::Pending, 1);
    assert!(
        s.wait_for_work(since, std::time::Duration::ZERO),
        "a new job raises the work signal"
    );
    let claim = at(s, 10).claim("r1", None, TTL).unwrap().unwrap();
    let since = s.work_seen();
    s.release(&claim.lease).unwrap();
    assert!(
        s.wait_for_work(since, std::time::Duration::ZERO),
        "a lease handed back too"
    );

    // Decisions: numbered per job in order, refused under a stale lease.
    let claim = at(s, 20).claim("r1", None, TTL).unwrap().unwrap();
    let d = crate::job::decision::JobDecision {
        seq: 0,
        job_id: "job-00000077".into(),
        step: 1,
        at_ms: 20,
        policy_hash: Some("h".into()),
        judgement: crate::job::decision::Judgement::Retry {
            failure: "locked".into(),
            retries: 0,
            attempts: 2,
            after_ms: Some(1000),
        },
    };
    assert_eq!(s.add_decision(&claim.lease, &sealed(&d)).unwrap(), 1);
    assert_eq!(s.add_decision(&claim.lease, &sealed(&d)).unwrap(), 2);
    let stale = Lease {
        fence: claim.lease.fence + 1,
        ..claim.lease.clone()
    };
    assert!(matches!(
        s.add_decision(&stale, &sealed(&d)),
        Err(JobStoreError::Fenced { .. })
    ));
    let read = s.decisions("job-0000007").unwrap();
    assert_eq!(read.iter().map(|d| d.seq).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(read[0].judgement, d.judgement);
}

/// SQLite only: an older file, written as an older build left it (rusqlite, `user_version`),
/// upgraded as it is opened. PostgreSQL's schema is upgraded by `oneshot store migrate` instead
/// (`tests/postgres.rs`).
#[test]
fn a_version_1_store_gains_the_decisions_table_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.db");
    drop(SqliteStore::open(&path).unwrap());
    {
        // As a build before decision records left it.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "DROP TABLE decisions; DROP TABLE runners; DROP TABLE session_entries;
             DROP TABLE journals; DROP TABLE web_sessions; DROP TABLE login_codes;
             DROP TABLE tokens; DROP TABLE notifications; PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let s = SqliteStore::open(&path).unwrap();
    add(&s, "job-00000001", JobState::Pending, 1);
    assert!(s.decisions("job-00000001").unwrap().is_empty());
    let c = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 7, "brought up to the current version");
    assert!(s.runners().unwrap().is_empty());
    assert!(s.notifications(None).unwrap().is_empty());
}
