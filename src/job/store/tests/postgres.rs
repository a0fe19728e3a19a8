//! The PostgreSQL store against a real server (a temporary cluster, `tests/common/pg_server.rs`):
//! its schema refused until migrated, and the contract's core moves, including a wake-up by
//! `NOTIFY` from another connection.

use super::*;

#[path = "../../../../tests/common/pg_server.rs"]
pub(crate) mod pg_server;

/// A migrated store on a fresh database whose leases are judged by this test's clock; `None`
/// when PostgreSQL is not installed here (not in CI: see `pg_server`).
pub(crate) fn postgres() -> Option<(PgUrl, PostgresStore)> {
    let url = PgUrl::parse(&pg_server::fresh_database()?).expect("url");
    PostgresStore::migrate(&url).expect("migrate");
    let clock = CLOCK.with(std::sync::Arc::clone);
    let store = PostgresStore::connect_with_clock(&url, clock).expect("connect");
    Some((url, store))
}

#[test]
fn a_new_database_is_refused_until_migrated_and_migrating_twice_is_nothing() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    let url = PgUrl::parse(&url).unwrap();
    let e = PostgresStore::connect(&url).unwrap_err().to_string();
    assert!(e.contains("oneshot store migrate"), "{e}");
    let m = PostgresStore::migrate(&url).unwrap();
    assert_eq!((m.from, m.to), (0, 1));
    let m = PostgresStore::migrate(&url).unwrap();
    assert_eq!((m.from, m.to), (1, 1));
    let s = PostgresStore::connect(&url).unwrap();
    // The database's clock: within a few seconds of this machine's.
    let db = s.now_ms().unwrap() as i64;
    let here = SystemClock.now_ms() as i64;
    assert!((db - here).abs() < 5_000, "{db} vs {here}");
}

#[test]
fn claims_fence_and_verbs_hold_on_postgres() {
    let Some((_url, s)) = postgres() else {
        return;
    };
    at(&s, 1_000);
    add(&s, "job-aaaa1111", JobState::Pending, 100);
    add(&s, "job-bbbb2222", JobState::Pending, 200);
    assert_eq!(s.get("job-a").unwrap().id, "job-aaaa1111");
    let c = s.claim("r1", None, TTL).unwrap().expect("a claim");
    assert_eq!(c.job.id, "job-aaaa1111");
    assert_eq!(c.lease.fence, 1);
    let c2 = s.claim("r2", None, TTL).unwrap().expect("the other");
    assert_eq!(c2.job.id, "job-bbbb2222");
    assert!(s.claim("r3", None, TTL).unwrap().is_none());
    let j = step(&s, &c.lease, c.job.clone(), JobState::Provisioning, 1_100);
    // Expired by the store's clock: another runner takes it, the old lease writes nothing.
    at(&s, 1_000 + TTL + 1);
    let again = s
        .claim("r3", Some("job-aaaa1111"), TTL)
        .unwrap()
        .expect("reclaimed");
    assert!(again.reclaimed);
    assert_eq!(again.lease.fence, 2);
    let stale = s.advance(&c.lease, &sealed(&j), None).unwrap_err();
    assert!(matches!(stale, JobStoreError::Fenced { .. }), "{stale}");
    assert_eq!(s.history("job-aaaa1111").unwrap().len(), 1);
    let v = s.add_artifact(&again.lease, &sealed(&artifact(1))).unwrap();
    assert_eq!(v, 1);
    assert_eq!(s.artifacts("job-aaaa1111").unwrap()[0].version, 1);
    let rows = s.list(&ListFilter::default()).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].runner.as_deref(), Some("r3"));
    assert_eq!(s.audit(Some("job-aaaa1111")).unwrap().len(), 1);
}

#[test]
fn a_waiting_runner_is_woken_by_another_connections_write() {
    let Some((url, s)) = postgres() else {
        return;
    };
    let other = PostgresStore::connect(&url).unwrap();
    let since = s.work_seen();
    // Nothing yet: the wait times out.
    assert!(!s.wait_for_work(since, std::time::Duration::from_millis(200)));
    let waiter = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        let woken = s.wait_for_work(u64::MAX, std::time::Duration::from_secs(20));
        (woken, started.elapsed())
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    add(&other, "job-cccc3333", JobState::Pending, 5);
    let (woken, took) = waiter.join().unwrap();
    assert!(woken, "woken by the NOTIFY");
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
}
