//! Rows the store did not write itself: legacy states, damaged data, files that are no store.
//!
//! SQLite only: each test writes the file behind the store's back with rusqlite (as an older
//! oneshot or another program would) or hands it a file that is no store at all. PostgreSQL's
//! own (a database not yet migrated, a legacy row) are in `tests/postgres.rs`.

use super::*;

/// A second connection to the store's file, as another program (or an older oneshot) has.
fn raw(s: &SqliteStore) -> rusqlite::Connection {
    rusqlite::Connection::open(s.path()).expect("raw connection")
}

/// Inserts a job row as an older oneshot wrote it: a legacy state name, in the column and in
/// the JSON alike.
fn legacy(s: &SqliteStore, id: &str, state: &str, owner: Option<&str>) {
    let mut value = serde_json::to_value(job(id, JobState::Pending, 100)).unwrap();
    value["state"] = state.into();
    raw(s)
        .execute(
            "INSERT INTO jobs (id, state, data, title, risk, steps, created_ms, updated_ms,
                               lease_owner, lease_until, fence)
             VALUES (?1, ?2, ?3, 't', 'high', 0, 100, 100, ?4, 5000, 1)",
            rusqlite::params![id, state, value.to_string(), owner],
        )
        .unwrap();
}

#[test]
fn a_legacy_row_is_migrated_on_read_written_back_and_audited() {
    let (_d, s) = store();
    legacy(&s, "job-stuck", "RUNNING", None);
    legacy(&s, "job-live", "RUNNING", Some("r1"));
    legacy(&s, "job-paused", "PAUSED", None);

    // `list` shows the migrated state before anything is written back.
    let listed: Vec<_> = s
        .list(&ListFilter::default())
        .unwrap()
        .iter()
        .map(|j| j.state)
        .collect();
    assert!(
        listed.contains(&JobState::InterventionRequired),
        "{listed:?}"
    );

    let stuck = s.get("job-stuck").unwrap();
    assert_eq!(stuck.state(), JobState::InterventionRequired);
    assert!(
        stuck
            .reason
            .as_ref()
            .map(ToString::to_string)
            .as_deref()
            .unwrap()
            .contains("migrated from RUNNING"),
        "{:?}",
        stuck.reason
    );
    assert_eq!(s.get("job-live").unwrap().state(), JobState::Executing);
    assert_eq!(s.get("job-paused").unwrap().state(), JobState::Suspended);

    let column: String = raw(&s)
        .query_row("SELECT state FROM jobs WHERE id = 'job-stuck'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(column, "INTERVENTION_REQUIRED");
    let audit = s.audit(Some("job-stuck")).unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(
        (audit[0].actor.as_str(), audit[0].action.as_str()),
        ("oneshot", "migrate")
    );
    assert_eq!(audit[0].metadata["from"], "RUNNING");
    assert_eq!(audit[0].metadata["to"], "INTERVENTION_REQUIRED");
    // Migrated once: reading again records nothing more.
    s.get("job-stuck").unwrap();
    assert_eq!(s.audit(None).unwrap().len(), 3);
    // The transition history is for the matrix's moves only.
    assert!(s.history("job-stuck").unwrap().is_empty());
}

#[test]
fn a_row_that_does_not_parse_is_corrupt_naming_the_job_and_what_to_do() {
    let (_d, s) = store();
    add(&s, "job-1", JobState::Pending, 1);
    raw(&s)
        .execute(
            "UPDATE jobs SET data = '{\"id\": \"job-1\", oops' WHERE id = 'job-1'",
            [],
        )
        .unwrap();
    let e = s.get("job-1").unwrap_err();
    let JobStoreError::Corrupt { id, message } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(id, "job-1");
    assert!(
        message.contains("table jobs") && message.contains("backup"),
        "{message}"
    );
    assert!(e.to_string().starts_with("job job-1: "), "{e}");
    // Claiming it fails the same way, and leaves no lease behind.
    assert!(matches!(
        at(&s, 10).claim("r1", None, TTL),
        Err(JobStoreError::Corrupt { .. })
    ));
    assert_eq!(s.lease("job-1").unwrap(), None);

    raw(&s)
        .execute("UPDATE jobs SET state = 'FLYING' WHERE id = 'job-1'", [])
        .unwrap();
    let e = s.list(&ListFilter::default()).unwrap_err();
    assert!(e.to_string().contains("FLYING"), "{e}");
}

#[test]
fn a_file_that_is_no_job_store_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "these are not the jobs you are looking for\n".repeat(100),
    )
    .unwrap();
    let e = SqliteStore::open(&text).unwrap_err();
    let JobStoreError::Db { path, message, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(path, &text);
    assert!(message.contains("not a oneshot job store"), "{message}");
    assert!(e.to_string().contains("notes.txt"), "{e}");

    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let e = SqliteStore::open(&other).unwrap_err().to_string();
    assert!(
        e.contains("other.db") && e.contains("not a oneshot job store"),
        "{e}"
    );

    let newer = dir.path().join("newer.db");
    rusqlite::Connection::open(&newer)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    let e = SqliteStore::open(&newer).unwrap_err().to_string();
    assert!(e.contains("newer oneshot") && e.contains("99"), "{e}");
}
