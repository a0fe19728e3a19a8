//! What a job's sessions leave in the store: log records numbered per job under the lease and
//! paged without a gap, journals replaced per session, a stale lease writing neither.

use super::*;
use crate::job::store::{SessionEntry, SessionJournal};

on_both_stores!(
    session_entries_are_numbered_per_job_under_the_lease_and_paged,
    a_journal_is_kept_per_session_and_replaced_by_a_newer_one,
    a_shipped_record_wakes_whoever_waits_for_a_change,
);

fn line(session: &str, n: u64) -> Redacted<SessionEntry> {
    sealed(&SessionEntry {
        seq: 0,
        session: session.to_string(),
        record: serde_json::json!({"type": "activity", "n": n, "text": "key sk-ant-api03-abcdefghijklmnopqrstuv"}),
        log_end: n * 100,
    })
}

fn session_entries_are_numbered_per_job_under_the_lease_and_paged(s: &dyn JobStore) {
    add(s, "job-00000001", JobState::Pending, 1);
    add(s, "job-00000002", JobState::Pending, 2);
    let a = at(s, 10)
        .claim("r1", Some("job-00000001"), TTL)
        .unwrap()
        .unwrap();
    let b = s.claim("r1", Some("job-00000002"), TTL).unwrap().unwrap();
    assert_eq!(
        s.add_session_entries(&a.lease, &[]).unwrap(),
        0,
        "nothing to write"
    );
    let first: Vec<_> = (1..=3).map(|n| line("s-1", n)).collect();
    assert_eq!(s.add_session_entries(&a.lease, &first).unwrap(), 3);
    assert_eq!(
        s.add_session_entries(&b.lease, &[line("s-9", 1)]).unwrap(),
        1,
        "per job"
    );
    let more: Vec<_> = (4..=5).map(|n| line("s-2", n)).collect();
    assert_eq!(s.add_session_entries(&a.lease, &more).unwrap(), 5);

    let all = s.session_entries("job-00000001", 0, 100).unwrap();
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    let ns: Vec<u64> = all
        .iter()
        .map(|e| e.record["n"].as_u64().unwrap())
        .collect();
    assert_eq!(ns, [1, 2, 3, 4, 5], "in the order written");
    assert_eq!(all[3].session, "s-2");
    assert!(
        !all[0].record["text"]
            .as_str()
            .unwrap()
            .contains("abcdefghij"),
        "redacted on the way in: {}",
        all[0].record
    );
    // Paging: after a number, at most a limit.
    let page: Vec<u64> = s
        .session_entries("job-00000001", 2, 2)
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(page, [3, 4]);
    assert!(s.session_entries("job-00000001", 5, 10).unwrap().is_empty());
    // How far each session's log was shipped.
    assert_eq!(s.shipped_to("job-00000001", "s-1").unwrap(), 300);
    assert_eq!(s.shipped_to("job-00000001", "s-2").unwrap(), 500);
    assert_eq!(s.shipped_to("job-00000001", "s-404").unwrap(), 0);
    // By prefix, as every read.
    assert!(matches!(
        s.session_entries("job-0000000", 0, 10),
        Err(JobStoreError::Ambiguous { .. })
    ));
    assert_eq!(s.session_entries("job-00000002", 0, 10).unwrap().len(), 1);

    // A lease another runner took over writes nothing.
    let stale = a.lease.clone();
    let taken = at(s, 10 + TTL + 1)
        .claim("r2", Some("job-00000001"), TTL)
        .unwrap()
        .unwrap();
    assert!(matches!(
        s.add_session_entries(&stale, &[line("s-2", 6)]),
        Err(JobStoreError::Fenced { .. })
    ));
    assert_eq!(
        s.add_session_entries(&taken.lease, &[line("s-3", 6)])
            .unwrap(),
        6
    );
    assert!(matches!(
        s.session_entries("job-00000404", 0, 10),
        Err(JobStoreError::NotFound { .. })
    ));
}

fn a_journal_is_kept_per_session_and_replaced_by_a_newer_one(s: &dyn JobStore) {
    add(s, "job-00000003", JobState::Pending, 1);
    let c = at(s, 10).claim("r1", None, TTL).unwrap().unwrap();
    let journal = |session: &str, iteration: u64| {
        sealed(&SessionJournal {
            session: session.to_string(),
            runner: "r1".into(),
            shipped_ms: 0,
            state: serde_json::json!({"iteration_count": iteration}),
        })
    };
    assert!(s.journals("job-00000003").unwrap().is_empty());
    s.put_journal(&c.lease, &journal("s-1", 1)).unwrap();
    at(s, 20).put_journal(&c.lease, &journal("s-2", 1)).unwrap();
    at(s, 30).put_journal(&c.lease, &journal("s-1", 4)).unwrap();
    let all: Vec<SessionJournal> = s.journals("job-00000003").unwrap();
    let seen: Vec<(&str, u64)> = all
        .iter()
        .map(|j| {
            (
                j.session.as_str(),
                j.state["iteration_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("s-1", 4), ("s-2", 1)],
        "first shipped first, the newest of each"
    );
    assert_eq!(all[0].runner, "r1");
    assert!(
        all[0].shipped_ms >= all[1].shipped_ms,
        "dated by the store when replaced"
    );
    let stale = c.lease.clone();
    at(s, 10 + TTL + 1).claim("r2", None, TTL).unwrap().unwrap();
    assert!(matches!(
        s.put_journal(&stale, &journal("s-1", 9)),
        Err(JobStoreError::Fenced { .. })
    ));
}

/// What a dashboard waits on: a write that makes no work (a session's records) still wakes a
/// waiter for changes — SQLite hears its file, PostgreSQL its `NOTIFY` — soon, not at the
/// wait's timeout.
fn a_shipped_record_wakes_whoever_waits_for_a_change(s: &dyn JobStore) {
    add(s, "job-00000001", JobState::Pending, 1);
    let a = at(s, 10)
        .claim("r1", Some("job-00000001"), TTL)
        .unwrap()
        .unwrap();
    // Each store hears its own writes only (another test's store does not wake it); still,
    // one of several tries must be woken by this write, soon.
    // The first wait registers the waiter (on PostgreSQL its row in `watchers`, after which
    // each step's writes are announced) and may return at once: the caller looks again.
    s.wait_for_change(s.change_seen(), std::time::Duration::ZERO);
    let heard = (0..5).any(|n| {
        let since = s.change_seen();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let t = std::time::Instant::now();
                let woken = s.wait_for_change(since, std::time::Duration::from_secs(20));
                (woken, t.elapsed())
            });
            std::thread::sleep(std::time::Duration::from_millis(100));
            s.add_session_entries(&a.lease, &[line("s-1", n)]).unwrap();
            let (woken, took) = waiter.join().unwrap();
            woken
                && took >= std::time::Duration::from_millis(100)
                && took < std::time::Duration::from_secs(5)
        })
    });
    assert!(heard, "no wait was woken by the write");
}
