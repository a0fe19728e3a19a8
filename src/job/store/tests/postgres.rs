//! What only the PostgreSQL store has, against a real server (a temporary cluster,
//! `tests/common/pg_server.rs`): its schema refused until migrated, a wake-up by `NOTIFY` from
//! another connection, leases judged by the server's clock, per-job numbers without gaps under
//! concurrent appends, a legacy row written by hand, a failure in the server's own words. The
//! contract both stores keep is in the `on_postgres` modules.

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
    let current = crate::job::store::postgres::schema::VERSION;
    assert_eq!((m.from, m.to), (0, current));
    let m = PostgresStore::migrate(&url).unwrap();
    assert_eq!((m.from, m.to), (current, current));
    // Version 6: a transition has no foreign key to its job (its insert cannot miss one);
    // the other per-job records keep theirs.
    let mut c = url.config.connect(::postgres::NoTls).unwrap();
    let mut keys = |table: &str| -> i64 {
        c.query_one(
            "SELECT count(*) FROM pg_constraint WHERE conrelid = $1::text::regclass AND contype = 'f'",
            &[&table],
        )
        .unwrap()
        .get(0)
    };
    assert_eq!(keys("transitions"), 0);
    assert_eq!(keys("artifacts"), 1);
    let s = PostgresStore::connect(&url).unwrap();
    // The database's clock: within a few seconds of this machine's.
    let db = s.now_ms().unwrap() as i64;
    let here = SystemClock.now_ms() as i64;
    assert!((db - here).abs() < 5_000, "{db} vs {here}");
}

/// A store a version-1 build made (no session tables): refused with the command to run, then
/// `migrate` brings it up, keeping its jobs, and its sessions' records can be written.
#[test]
fn a_version_1_store_is_refused_then_migrated_keeping_its_jobs() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    let url = PgUrl::parse(&url).unwrap();
    PostgresStore::migrate(&url).unwrap();
    add(
        &PostgresStore::connect(&url).unwrap(),
        "job-11110000",
        JobState::Pending,
        1,
    );
    {
        let mut c = url.config.connect(::postgres::NoTls).unwrap();
        c.batch_execute(
            "DROP TABLE session_entries; DROP TABLE journals;
             DROP TABLE web_sessions; DROP TABLE login_codes; DROP TABLE tokens;
             DROP TABLE notifications; DROP TABLE watchers;
             DELETE FROM oneshot_schema WHERE version > 1;",
        )
        .unwrap();
    }
    let e = PostgresStore::connect(&url).unwrap_err().to_string();
    assert!(
        e.contains("schema is version 1") && e.contains("oneshot store migrate"),
        "{e}"
    );
    let m = PostgresStore::migrate(&url).unwrap();
    assert_eq!(m.from, 1);
    let s = PostgresStore::connect(&url).unwrap();
    assert_eq!(s.get("job-11110000").unwrap().state(), JobState::Pending);
    let c = s.claim("r1", None, TTL).unwrap().unwrap();
    let e = crate::job::store::SessionEntry {
        seq: 0,
        session: "s".into(),
        record: serde_json::json!({"type": "x"}),
        log_end: 10,
    };
    assert_eq!(s.add_session_entries(&c.lease, &[sealed(&e)]).unwrap(), 1);
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

/// Cancels job `id` as a human does, with every time in the verb — the job's, the
/// transition's and the audit entry's — at `believed`: what the human's own clock says.
fn cancel_at(s: &dyn JobStore, id: &str, believed: u64) -> Result<(), JobStoreError> {
    let mut j = s.get(id)?;
    let from = j.state();
    j.phase = crate::job::JobPhase::of(JobState::Canceled, None, None);
    j.updated_ms = believed;
    s.decide(&Decision {
        job: &sealed(&j),
        expected: from,
        transition: Some(&sealed(&moved(
            from,
            JobState::Canceled,
            JobTrigger::Cancel,
            believed,
        ))),
        audit: &sealed(&entry(id, "cancel", believed)),
        revoke: false,
    })
}

/// A runner stopped between its BEGIN and its COMMIT holds its job's row lock, so every
/// other runner's `SKIP LOCKED` claim passes the job by even after its lease ran out: the
/// server ends such a session after [`IDLE_IN_TRANSACTION`], the row is free, and the stopped
/// runner, woken, has nothing left to commit and is fenced.
#[test]
fn a_runner_stopped_inside_a_transaction_keeps_its_job_from_the_others_only_briefly() {
    use crate::job::store::postgres::IDLE_IN_TRANSACTION;
    use std::time::{Duration, Instant};
    let Some((url, a)) = postgres() else {
        return;
    };
    let b = PostgresStore::connect_with_clock(&url, CLOCK.with(std::sync::Arc::clone)).unwrap();
    add(&a, "job-1", JobState::Pending, 100);
    let lease = at(&a, 1_000).claim("A", None, TTL).unwrap().unwrap().lease;
    std::thread::scope(|s| {
        let (locked, is_locked) = std::sync::mpsc::channel();
        let stalled = s.spawn(|| a.stall_in_transaction("job-1", locked, IDLE_IN_TRANSACTION * 3));
        is_locked.recv().unwrap();
        let since = Instant::now();
        // A's lease is over, but its row is locked: B passes it by.
        assert_eq!(at(&b, 2_001 + TTL).claim("B", None, TTL).unwrap(), None);
        // Until the server ends A's session.
        let claim = loop {
            if let Some(c) = b.claim("B", None, TTL).unwrap() {
                break c;
            }
            assert!(
                since.elapsed() < IDLE_IN_TRANSACTION * 2,
                "B could not claim the job {:?} after A stopped inside a transaction",
                since.elapsed()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        // (Half: the server's clock for the idle time started a moment before `since`.)
        assert!(since.elapsed() >= IDLE_IN_TRANSACTION / 2);
        assert_eq!(claim.lease.fence, lease.fence + 1);
        // A wakes: its transaction is gone, and its next write is fenced.
        let e = stalled.join().unwrap().unwrap_err().to_string();
        assert!(e.contains("nothing was written"), "{e}");
    });
    assert_eq!(
        a.heartbeat(&lease, TTL).unwrap_err(),
        JobStoreError::Fenced {
            id: "job-1".into(),
            fence: lease.fence
        }
    );
}

#[test]
fn leases_are_judged_by_the_databases_clock_whatever_the_caller_believes() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    let url = PgUrl::parse(&url).unwrap();
    PostgresStore::migrate(&url).unwrap();
    // No test clock: the server's.
    let s = PostgresStore::connect(&url).unwrap();
    // The test's clock is not asked (it says 5 ms past the epoch).
    at(&s, 5);
    let before = s.now_ms().unwrap();
    let here = SystemClock.now_ms();
    assert!(before.abs_diff(here) < 5_000, "{before} vs {here}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let later = s.now_ms().unwrap();
    assert!(
        (300..5_000).contains(&(later - before)),
        "the server's clock moved {} ms in 300 ms",
        later as i64 - before as i64
    );

    // A live lease, counted from the server's now.
    let j = add(&s, "job-live", JobState::Pending, later);
    let lease = s.claim("r1", None, TTL).unwrap().unwrap().lease;
    let after = s.now_ms().unwrap();
    assert!(
        (later + TTL..=after + TTL).contains(&lease.until_ms),
        "{} not within [{}, {}]",
        lease.until_ms,
        later + TTL,
        after + TTL
    );
    step(&s, &lease, j, JobState::Executing, after);
    // A human whose clock runs a day ahead believes the lease long expired: the server does
    // not, and the verb waits for the runner.
    let day = 86_400_000;
    at(&s, after + day);
    let busy = cancel_at(&s, "job-live", after + day).unwrap_err();
    assert_eq!(
        busy,
        JobStoreError::Busy {
            id: "job-live".into(),
            runner: "r1".into()
        }
    );
    // Nor can another runner, whatever its clock, take it.
    assert_eq!(s.claim("r2", None, TTL).unwrap(), None);
    assert_eq!(s.get("job-live").unwrap().state(), JobState::Executing);
    // A heartbeat renews from the server's now too.
    let renewed = s.heartbeat(&lease, TTL).unwrap();
    assert!(renewed.until_ms >= after + TTL, "{renewed:?}");

    // A short lease, expired by the server's clock: a human whose clock lags (believing the
    // lease is still live) may act without revoking, and the runner is fenced.
    let j = add(&s, "job-short", JobState::Pending, after);
    let short = s
        .claim("r1", Some("job-short"), 200)
        .unwrap()
        .unwrap()
        .lease;
    step(&s, &short, j, JobState::Executing, after);
    while s.now_ms().unwrap() <= short.until_ms {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    cancel_at(&s, "job-short", short.until_ms - 200).unwrap();
    assert_eq!(s.get("job-short").unwrap().state(), JobState::Canceled);
    assert!(matches!(
        s.heartbeat(&short, TTL),
        Err(JobStoreError::Fenced { .. })
    ));
}

/// The per-job numbers of `job` in the database, in order: transitions' `seq`, artifacts'
/// `version`, decisions' `seq` and audit entries' `job_seq` — read each in one statement (one
/// snapshot), as a reader paging them does.
fn numbers(c: &mut ::postgres::Client, job: &str) -> [Vec<i64>; 4] {
    let mut read = |sql: &str| -> Vec<i64> {
        c.query(sql, &[&job])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    [
        read("SELECT seq FROM transitions WHERE job_id = $1 ORDER BY seq"),
        read("SELECT version::bigint FROM artifacts WHERE job_id = $1 ORDER BY version"),
        read("SELECT seq FROM decisions WHERE job_id = $1 ORDER BY seq"),
        read("SELECT job_seq FROM audit WHERE job_id = $1 ORDER BY job_seq"),
    ]
}

/// Raises its flag when dropped, also by a panic.
struct Stop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Whether `got` is 1, 2, …, n: no gap, no repeat.
fn gap_free(got: &[i64]) -> bool {
    got.iter().copied().eq(1..=got.len() as i64)
}

#[test]
fn per_job_numbers_have_no_gaps_when_many_threads_append_to_one_job_at_once() {
    const THREADS: usize = 8;
    const EACH: usize = 15;
    let Some((url, s)) = postgres() else {
        return;
    };
    let id = "job-busy";
    let j = add(&s, id, JobState::Pending, 1);
    let lease = at(&s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    let j = step(&s, &lease, j, JobState::Executing, 1_001);
    // A lease that is no longer current (as a runner that stalled holds): its appends are
    // refused, and take no number.
    let stale = Lease {
        fence: lease.fence - 1,
        ..lease.clone()
    };
    let clock = CLOCK.with(std::sync::Arc::clone);
    let start = std::sync::Barrier::new(THREADS + 1);
    let done = std::sync::atomic::AtomicBool::new(false);
    let (written, snapshots) = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (url, clock, start, lease, j) = (&url, clock.clone(), &start, &lease, &j);
                scope.spawn(move || {
                    let w = PostgresStore::connect_with_clock(url, clock).unwrap();
                    start.wait();
                    let mut got = Vec::new();
                    for k in 0..EACH {
                        let tag = format!("{t}-{k}");
                        let mut a = artifact(1);
                        a.diff_hash.clone_from(&tag);
                        let version = w.add_artifact(lease, &sealed(&a)).unwrap();
                        let d = crate::job::decision::JobDecision {
                            seq: 0,
                            job_id: id.into(),
                            step: 1,
                            at_ms: 1,
                            policy_hash: Some(tag.clone()),
                            judgement: crate::job::decision::Judgement::Retry {
                                failure: "locked".into(),
                                retries: 0,
                                attempts: 2,
                                after_ms: None,
                            },
                        };
                        let seq = w.add_decision(lease, &sealed(&d)).unwrap();
                        let mut t = moved(
                            JobState::Executing,
                            JobState::Executing,
                            JobTrigger::Step,
                            2,
                        );
                        t.by.clone_from(&tag);
                        w.advance(lease, &sealed(j), Some(&sealed(&t))).unwrap();
                        let mut e = entry(id, "cleanup", 3);
                        e.metadata.insert("tag".into(), tag.clone().into());
                        w.record(&sealed(&e)).unwrap();
                        got.push((tag, version, seq));
                    }
                    got
                })
            })
            .collect();
        let (url, clock, start, stale, done) = (&url, clock.clone(), &start, &stale, &done);
        let refused = scope.spawn(move || {
            let w = PostgresStore::connect_with_clock(url, clock).unwrap();
            start.wait();
            let mut n = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                assert!(matches!(
                    w.add_artifact(stale, &sealed(&artifact(1))),
                    Err(JobStoreError::Fenced { .. })
                ));
                n += 1;
            }
            n
        });
        // A reader paging the job's records while they are written: every snapshot it sees
        // is 1, 2, …, n, never with a number missing that a later one fills in.
        let reader = scope.spawn(move || {
            let mut c = url.config.connect(::postgres::NoTls).unwrap();
            let mut snapshots = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                for seen in numbers(&mut c, id) {
                    assert!(gap_free(&seen), "a reader saw a gap: {seen:?}");
                }
                snapshots += 1;
            }
            snapshots
        });
        // However the writers end (a failed append panics one), the others stop looking.
        let stop = Stop(done);
        let written: Vec<_> = writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        drop(stop);
        assert!(refused.join().unwrap() > 0, "the stale lease tried");
        (written, reader.join().unwrap())
    });
    eprintln!("a reader saw {snapshots} snapshots while the writers ran");

    let n = THREADS * EACH;
    let mut c = url.config.connect(::postgres::NoTls).unwrap();
    let [transitions, versions, decisions, audit] = numbers(&mut c, id);
    // The step before the writers, and each writer's move.
    assert_eq!(transitions.len(), n + 1);
    assert!(gap_free(&transitions), "{transitions:?}");
    assert_eq!(versions.len(), n);
    assert!(gap_free(&versions), "{versions:?}");
    assert_eq!(decisions.len(), n);
    assert!(gap_free(&decisions), "{decisions:?}");
    // The creation, and each writer's entry.
    assert_eq!(audit.len(), n + 1);
    assert!(gap_free(&audit), "{audit:?}");

    // The numbers each writer was given are the ones its records are stored under.
    let artifacts = s.artifacts(id).unwrap();
    let decided = s.decisions(id).unwrap();
    for (tag, version, seq) in &written {
        let a = &artifacts[*version as usize - 1];
        assert_eq!((a.version, &a.diff_hash), (*version, tag));
        let d = &decided[*seq as usize - 1];
        assert_eq!((d.seq, d.policy_hash.as_ref()), (*seq, Some(tag)));
    }
    // Each writer's own appends are in its order: the numbers follow commit order.
    let history = s.history(id).unwrap();
    let trail = s.audit(Some(id)).unwrap();
    for t in 0..THREADS {
        let mine = |tags: Vec<String>| -> Vec<String> {
            tags.into_iter()
                .filter(|tag| tag.starts_with(&format!("{t}-")))
                .collect()
        };
        let expected: Vec<String> = (0..EACH).map(|k| format!("{t}-{k}")).collect();
        assert_eq!(
            mine(history.iter().map(|h| h.by.clone()).collect()),
            expected
        );
        assert_eq!(
            mine(
                trail
                    .iter()
                    .filter_map(|e| e.metadata.get("tag")?.as_str().map(String::from))
                    .collect()
            ),
            expected
        );
    }
}

#[test]
fn a_database_failure_keeps_the_servers_own_words() {
    let Some((url, s)) = postgres() else {
        return;
    };
    add(&s, "job-1", JobState::Pending, 1);
    // As a careless hand (or a half-applied restore) leaves it.
    url.config
        .connect(::postgres::NoTls)
        .unwrap()
        .batch_execute("DROP TABLE decisions")
        .unwrap();
    let e = s.decisions("job-1").unwrap_err();
    let JobStoreError::Db { message, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(message.contains("oneshot store migrate"), "{message}");
    // The cause, printed after the message: what PostgreSQL said, not only that it failed.
    let cause = std::error::Error::source(&e).expect("a cause").to_string();
    assert!(
        cause.contains(r#"relation "decisions" does not exist"#),
        "{cause}"
    );
}

#[test]
fn a_legacy_row_is_migrated_on_read_written_back_and_audited_on_postgres() {
    let Some((url, s)) = postgres() else {
        return;
    };
    // As an older oneshot wrote it: a legacy state name, in the column and in the JSON alike.
    let mut c = url.config.connect(::postgres::NoTls).unwrap();
    for (id, state, owner) in [
        ("job-stuck", "RUNNING", None),
        ("job-live", "RUNNING", Some("r1")),
    ] {
        let mut value = serde_json::to_value(job(id, JobState::Pending, 100)).unwrap();
        value["state"] = state.into();
        c.execute(
            "INSERT INTO jobs (id, state, data, title, risk, steps, created_ms, updated_ms,
                               lease_owner, lease_until, fence)
             VALUES ($1, $2, $3, 't', 'high', 0, 100, 100, $4, 5000, 1)",
            &[&id, &state, &value.to_string(), &owner],
        )
        .unwrap();
    }
    let listed: Vec<_> = s
        .list(&ListFilter::default())
        .unwrap()
        .iter()
        .map(|j| j.state)
        .collect();
    assert_eq!(
        listed,
        [JobState::Executing, JobState::InterventionRequired],
        "shown migrated before anything is written back"
    );
    let stuck = s.get("job-stuck").unwrap();
    assert_eq!(stuck.state(), JobState::InterventionRequired);
    let column: String = c
        .query_one("SELECT state FROM jobs WHERE id = 'job-stuck'", &[])
        .unwrap()
        .get(0);
    assert_eq!(column, "INTERVENTION_REQUIRED");
    let audit = s.audit(Some("job-stuck")).unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(
        (audit[0].actor.as_str(), audit[0].action.as_str()),
        ("oneshot", "migrate")
    );
    assert_eq!(audit[0].metadata["from"], "RUNNING");
    assert_eq!(audit[0].metadata["to"], "INTERVENTION_REQUIRED");
    assert_eq!(s.get("job-live").unwrap().state(), JobState::Executing);
    // Migrated once: reading again records nothing more.
    s.get("job-stuck").unwrap();
    assert_eq!(s.audit(Some("job-stuck")).unwrap().len(), 1);
    assert!(s.history("job-stuck").unwrap().is_empty());
}

#[test]
fn a_version_1_store_is_refused_then_upgraded_and_its_histories_go_on_numbered() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    let url = PgUrl::parse(&url).unwrap();
    let mut c = url.config.connect(::postgres::NoTls).unwrap();
    let m = crate::job::store::postgres::schema::migrate_to(&mut c, 1)
        .unwrap()
        .unwrap();
    assert_eq!((m.from, m.to), (0, 1));
    // As a version-1 oneshot left it: a job three moves into its history, and one with none.
    for (id, moves) in [("job-old", 3_i64), ("job-new", 0)] {
        let value = serde_json::to_value(job(id, JobState::Pending, 100)).unwrap();
        c.execute(
            "INSERT INTO jobs (id, state, data, title, risk, steps, created_ms, updated_ms)
             VALUES ($1, 'PENDING', $2, 't', 'medium', 0, 100, 100)",
            &[&id, &value.to_string()],
        )
        .unwrap();
        for seq in 1..=moves {
            let mut t = moved(JobState::Pending, JobState::Pending, JobTrigger::Step, 1);
            t.by = format!("v1-{seq}");
            c.execute(
                "INSERT INTO transitions (job_id, seq, data) VALUES ($1, $2, $3)",
                &[&id, &seq, &serde_json::to_string(&t).unwrap()],
            )
            .unwrap();
        }
    }
    let e = PostgresStore::connect(&url).unwrap_err().to_string();
    assert!(
        e.contains("version 1, older") && e.contains("oneshot store migrate"),
        "{e}"
    );

    let m = PostgresStore::migrate(&url).unwrap();
    assert_eq!(
        (m.from, m.to),
        (1, crate::job::store::postgres::schema::VERSION)
    );
    let clock = CLOCK.with(std::sync::Arc::clone);
    let s = PostgresStore::connect_with_clock(&url, clock).unwrap();
    // Each job's next transition is numbered one past its last, as version 1 numbered them.
    for id in ["job-old", "job-new"] {
        let claim = at(&s, 1_000).claim("r1", Some(id), TTL).unwrap().unwrap();
        let j = step(&s, &claim.lease, claim.job, JobState::Provisioning, 1_001);
        step(&s, &claim.lease, j, JobState::InterventionRequired, 1_002);
    }
    let [old, ..] = numbers(&mut c, "job-old");
    assert_eq!(old, [1, 2, 3, 4, 5]);
    let by: Vec<String> = s
        .history("job-old")
        .unwrap()
        .into_iter()
        .map(|t| t.by)
        .collect();
    assert_eq!(by, ["v1-1", "v1-2", "v1-3", "runner-test", "runner-test"]);
    let [new, ..] = numbers(&mut c, "job-new");
    assert_eq!(new, [1, 2]);
}

/// The next notification on `listener`'s work channel: its payload (waiting up to 10 s).
fn next_note(listener: &mut ::postgres::Client) -> Option<String> {
    use ::postgres::fallible_iterator::FallibleIterator;
    listener
        .notifications()
        .timeout_iter(std::time::Duration::from_secs(10))
        .next()
        .unwrap()
        .map(|n| n.payload().to_string())
}

#[test]
fn a_one_statement_write_wakes_runners_only_when_it_makes_work_and_only_when_it_took() {
    let Some((url, s)) = postgres() else {
        return;
    };
    let mut listener = url.config.connect(::postgres::NoTls).unwrap();
    listener.batch_execute("LISTEN oneshot_work").unwrap();
    let mut other = url.config.connect(::postgres::NoTls).unwrap();
    // Sent after a write that should have sent nothing: the next one heard must be this.
    let mut marker = |tag: &str| {
        other
            .batch_execute(&format!("NOTIFY oneshot_work, '{tag}'"))
            .unwrap();
    };

    let j = add(&s, "job-1", JobState::Pending, 1);
    assert_eq!(next_note(&mut listener).as_deref(), Some(""), "created");
    let lease = at(&s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    let j = step(&s, &lease, j, JobState::Executing, 1_001);
    marker("executing");
    assert_eq!(
        next_note(&mut listener).as_deref(),
        Some("executing"),
        "a move to a busy state is no work for another runner"
    );

    // A stale lease moving the job back to PENDING is refused, and wakes no one.
    let stale = Lease {
        fence: lease.fence - 1,
        ..lease.clone()
    };
    let mut back = j.clone();
    back.phase = crate::job::JobPhase::of(JobState::Pending, None, None);
    let t = moved(
        JobState::Executing,
        JobState::Pending,
        JobTrigger::Step,
        1_002,
    );
    assert!(matches!(
        s.advance(&stale, &sealed(&back), Some(&sealed(&t))),
        Err(JobStoreError::Fenced { .. })
    ));
    assert!(matches!(
        s.release(&stale),
        Err(JobStoreError::Fenced { .. })
    ));
    marker("refused");
    assert_eq!(next_note(&mut listener).as_deref(), Some("refused"));
    assert_eq!(
        s.history("job-1").unwrap().len(),
        1,
        "the refused move left no trace"
    );

    // The current lease's move back to PENDING (a retry) is work: it wakes the runners.
    step(&s, &lease, j, JobState::Pending, 1_003);
    assert_eq!(next_note(&mut listener).as_deref(), Some(""), "a retry");
    // So is a lease handed back.
    let lease = at(&s, 2_000).claim("r2", None, TTL).unwrap().unwrap().lease;
    s.release(&lease).unwrap();
    assert_eq!(next_note(&mut listener).as_deref(), Some(""), "a release");
    let [transitions, ..] = numbers(&mut other, "job-1");
    assert_eq!(transitions, [1, 2]);
}

/// Each step's progress (a transition) announces itself on the change channel only while some
/// process waits for every change (`wait_for_change` registers it in `watchers`); news (an
/// audit entry: a message said to a job) always does, so a runner's relay, which waits for
/// news alone, registers nothing. A watcher that goes away takes its row with it.
#[test]
fn progress_is_announced_only_while_someone_watches_and_news_always() {
    use crate::job::store::postgres::{CHANGE_CHANNEL, WATCHERS_SEEN};
    use ::postgres::fallible_iterator::FallibleIterator;
    use std::time::{Duration, Instant};
    let Some((url, runner)) = postgres() else {
        return;
    };
    let mut ear = url.config.connect(::postgres::NoTls).unwrap();
    ear.batch_execute(&format!("LISTEN {CHANGE_CHANNEL}"))
        .unwrap();
    let heard = |ear: &mut ::postgres::Client| -> Vec<String> {
        let mut notes = ear.notifications();
        let mut got = Vec::new();
        // What was committed has been sent: a short wait takes it all.
        let mut it = notes.timeout_iter(Duration::from_millis(300));
        while let Ok(Some(n)) = it.next() {
            got.push(n.payload().to_string());
        }
        got
    };
    let j = add(&runner, "job-1", JobState::Pending, 100);
    let lease = at(&runner, 1_000)
        .claim("r1", None, TTL)
        .unwrap()
        .unwrap()
        .lease;
    heard(&mut ear);

    // Nobody watches: a step's move is silent, a message said to the job is not.
    let j = step(&runner, &lease, j, JobState::Provisioning, 1_001);
    assert_eq!(heard(&mut ear), Vec::<String>::new());
    runner
        .record(&sealed(&entry("job-1", "message", 1_002)))
        .unwrap();
    assert_eq!(heard(&mut ear), ["job-1"]);
    // The relay's wait for news registers nothing.
    let relay = PostgresStore::connect(&url).unwrap();
    relay.change_seen();
    relay.wait_for_news(0, Duration::from_millis(10));
    let j = step(&runner, &lease, j, JobState::Executing, 1_003);
    assert_eq!(heard(&mut ear), Vec::<String>::new());

    // A dashboard waits for every change: its first wait returns at once (it registered,
    // and must look); writers learn of it within WATCHERS_SEEN, so its waits until then end
    // by then, saying to look again, changed or not.
    let board = PostgresStore::connect(&url).unwrap();
    board.change_seen();
    let since = Instant::now();
    assert!(board.wait_for_change(0, Duration::from_secs(30)));
    assert!(board.wait_for_change(0, Duration::from_secs(30)));
    let waited = since.elapsed();
    assert!(
        waited < WATCHERS_SEEN * 2 + Duration::from_secs(1),
        "the fresh watcher waited {waited:?}"
    );
    heard(&mut ear);
    // From then on every move is announced, and wakes it.
    std::thread::sleep(WATCHERS_SEEN);
    std::thread::scope(|s| {
        let woken = s.spawn(|| {
            let t = Instant::now();
            (
                board.wait_for_change(0, Duration::from_secs(10)),
                t.elapsed(),
            )
        });
        std::thread::sleep(Duration::from_millis(200));
        step(&runner, &lease, j.clone(), JobState::Harvesting, 1_004);
        let (woken, took) = woken.join().unwrap();
        assert!(
            woken && took < Duration::from_secs(5),
            "woken {woken} after {took:?}"
        );
        assert_eq!(heard(&mut ear), ["job-1"]);
    });
    // Gone: its row with it, and the steps are silent again.
    drop(board);
    let mut c = url.config.connect(::postgres::NoTls).unwrap();
    let rows: i64 = c
        .query_one("SELECT count(*) FROM watchers", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 0);
    std::thread::sleep(WATCHERS_SEEN);
    let j = runner.get("job-1").unwrap();
    step(&runner, &lease, j, JobState::ApprovalRequired, 1_005);
    assert_eq!(heard(&mut ear), Vec::<String>::new());
}
