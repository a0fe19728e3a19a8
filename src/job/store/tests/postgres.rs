//! What only the PostgreSQL store has, against a real server (a temporary cluster,
//! `tests/common/pg_server.rs`): its schema refused until migrated, a wake-up by `NOTIFY` from
//! another connection, leases judged by the server's clock, and per-job numbers without gaps
//! under concurrent appends. The contract both stores keep is in the `on_postgres` modules.

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
