//! The live stream's topics over a real SQLite store: what a reader is sent is what the page
//! renders, from any cursor, once; a reader that falls behind is dropped, not thinned; and a
//! write by another handle on the store's file (as another process's would be) is heard.

use super::cursor::Cursor;
use super::event::LiveEvent;
use super::hub::Hub;
use super::job_topic::JobTopic;
use crate::engine::Stream;
use crate::job::record::{AuditAction, AuditEntry, Transition};
use crate::job::store::prelude::*;
use crate::job::store::{Lease, SessionEntry, SqliteStore};
use crate::job::{Job, JobPhase, JobSpec, JobState, JobTrigger};
use crate::process::Role;
use crate::store::{Activity, Record};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::TryRecvError;

fn sealed<T: serde::Serialize + serde::de::DeserializeOwned>(
    value: &T,
) -> crate::redact::Redacted<T> {
    crate::job::redactor(None).seal(value).expect("seal")
}

/// A claimed job on a store in `dir`, in EXECUTING.
fn running(store: &SqliteStore, id: &str) -> (Job, Lease) {
    let mut j = Job::new(
        id,
        JobSpec::new("t", "/src", "claude", "codex"),
        JobState::Pending,
        1,
    );
    let audit = AuditEntry::job(id, AuditAction::Create, "ann", 1, Default::default());
    store.create(&sealed(&j), &sealed(&audit)).expect("create");
    let lease = store
        .claim("runner-a", Some(id), 60_000)
        .unwrap()
        .unwrap()
        .lease;
    j.steps += 1;
    moved(
        store,
        &mut j,
        &lease,
        JobState::Provisioning,
        JobTrigger::Step,
    );
    moved(
        store,
        &mut j,
        &lease,
        JobState::Executing,
        JobTrigger::Provisioned,
    );
    (j, lease)
}

fn moved(store: &SqliteStore, j: &mut Job, lease: &Lease, to: JobState, trigger: JobTrigger) {
    let t = Transition {
        from: j.state(),
        to,
        trigger,
        reason: None,
        at_ms: 2,
        by: lease.runner.clone(),
    };
    j.phase = JobPhase::of(to, None, None);
    j.updated_ms += 1;
    store
        .advance(lease, &sealed(&*j), Some(&sealed(&t)))
        .expect("advance");
}

/// Ships `n` output lines of session `session`, numbered from `from`.
fn said(store: &dyn JobStore, lease: &Lease, session: &str, from: usize, n: usize) {
    let entries: Vec<_> = (from..from + n)
        .map(|i| {
            let r = Record::Activity(Activity {
                ts: 10 + i as u64,
                role: Role::Worker,
                iteration: 1,
                executor: "command".into(),
                stream: Stream::Stdout,
                partial: false,
                data: serde_json::json!(format!("line {i}")),
            });
            sealed(&SessionEntry {
                seq: 0,
                session: session.into(),
                record: serde_json::to_value(&r).unwrap(),
                log_end: 0,
            })
        })
        .collect();
    store.add_session_entries(lease, &entries).expect("ship");
}

/// The entries whose lines the job page shows, in order.
fn page_entries(store: &dyn JobStore, id: &str) -> Vec<u64> {
    let viewer = crate::serve::pages::Viewer {
        name: "ann".into(),
        can_operate: false,
        can_approve: false,
    };
    let page =
        crate::serve::pages::job(store, id, &viewer, std::path::Path::new("/nonexistent")).unwrap();
    page.match_indices("data-entry=\"")
        .map(|(i, m)| {
            let rest = &page[i + m.len()..];
            rest[..rest.find('"').unwrap()].parse().unwrap()
        })
        .collect()
}

fn lines(events: &[Arc<LiveEvent>]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match &**e {
            LiveEvent::Line { entry, .. } => Some(*entry),
            _ => None,
        })
        .collect()
}

fn drain(rx: &mut tokio::sync::broadcast::Receiver<Arc<LiveEvent>>) -> Vec<Arc<LiveEvent>> {
    let mut out = Vec::new();
    loop {
        match rx.try_recv() {
            Ok(e) => out.push(e),
            Err(TryRecvError::Empty | TryRecvError::Closed) => return out,
            Err(TryRecvError::Lagged(n)) => panic!("lagged by {n}"),
        }
    }
}

#[test]
fn a_reader_gets_from_any_cursor_exactly_what_the_page_shows_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("jobs.db")).unwrap();
    let (mut j, lease) = running(&store, "job-1");
    said(&store, &lease, "s-1", 1, 5);
    let topic = JobTopic::open(&store, "job-1", 64).unwrap();

    // A page rendered at entry 2 joins: entries 3–5 replayed, then live ones.
    let mut joined = topic
        .join(
            &store,
            Some(Cursor {
                transitions: 2,
                entries: 2,
            }),
        )
        .unwrap();
    assert_eq!(lines(&joined.replay), [3, 4, 5]);
    // Another reader, live from now, and one from the very start.
    let mut now = topic.join(&store, None).unwrap();
    assert!(now.replay.is_empty());
    let start = topic.join(&store, Some(Cursor::default())).unwrap();
    assert_eq!(lines(&start.replay), [1, 2, 3, 4, 5]);
    assert!(
        matches!(&*start.replay[5], LiveEvent::Job { at, .. } if at.transitions == 2),
        "the transitions it lacks: one job event at the topic's cursor"
    );

    said(&store, &lease, "s-1", 6, 2);
    said(&store, &lease, "s-2", 1, 1);
    moved(
        &store,
        &mut j,
        &lease,
        JobState::Harvesting,
        JobTrigger::Completed,
    );
    topic.poll(&store).unwrap();
    topic.poll(&store).unwrap(); // nothing new: nothing sent twice
    let live = drain(&mut joined.rx);
    assert_eq!(lines(&live), [6, 7, 8]);
    let last = live.last().unwrap();
    assert!(
        matches!(&**last, LiveEvent::Job { state, at, .. }
            if state == "HARVESTING" && *at == Cursor { transitions: 3, entries: 8 }),
        "{last:?}"
    );
    assert_eq!(lines(&drain(&mut now.rx)), [6, 7, 8]);

    // What the readers were sent is what the page shows: same entries, same order.
    let mut got = lines(&joined.replay);
    got.extend(lines(&live));
    assert_eq!(page_entries(&store, "job-1"), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(got, [3, 4, 5, 6, 7, 8]);
    // And each line's HTML is the page's.
    let page = crate::serve::pages::job(
        &store,
        "job-1",
        &crate::serve::pages::Viewer {
            name: "ann".into(),
            can_operate: false,
            can_approve: false,
        },
        std::path::Path::new("/nonexistent"),
    )
    .unwrap();
    for e in &live {
        if let LiveEvent::Line { html, .. } = &**e {
            assert!(page.contains(html.as_str()), "{html}");
        }
    }

    // A reconnect from the id of the last line it had gets nothing more than the rest.
    let again = topic
        .join(
            &store,
            Some(Cursor {
                transitions: 3,
                entries: 7,
            }),
        )
        .unwrap();
    assert_eq!(lines(&again.replay), [8]);
}

#[tokio::test]
async fn a_reader_that_falls_behind_is_told_and_dropped_not_thinned() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("jobs.db")).unwrap();
    let (_j, lease) = running(&store, "job-1");
    let topic = JobTopic::open(&store, "job-1", 4).unwrap();
    let slow = topic
        .join(
            &store,
            Some(Cursor {
                transitions: 2,
                entries: 0,
            }),
        )
        .unwrap();
    assert!(slow.replay.is_empty());
    said(&store, &lease, "s-1", 1, 10);
    topic.poll(&store).unwrap();
    let watch = super::auth::Watch::new(super::auth::Credential::Bearer("osk_x".into()));
    let sent: Vec<String> = super::events(slow.replay.into(), slow.rx, watch)
        .map(|e| format!("{:?}", e.unwrap()))
        .collect()
        .await;
    let text = sent.join("\n");
    assert!(text.contains("lagged"), "{text}");
    assert!(
        sent.last().unwrap().contains("lagged"),
        "the stream ends there: {text}"
    );
    // The retry interval, then `lagged`: no line past the gap is sent as if none were lost.
    assert_eq!(sent.len(), 2, "{text}");
}

#[test]
fn the_hub_hears_a_write_made_through_another_handle_on_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let (_j, lease) = running(&store, "job-1");
    let hub = Hub::start(store.clone());
    let topic = hub.job("job-1").unwrap();
    let mut joined = topic.join(hub.store(), None).unwrap();

    // The runner's handle: another connection, as another process has.
    let runner = SqliteStore::open(&path).unwrap();
    let wrote = std::time::Instant::now();
    said(&runner, &lease, "s-1", 1, 1);
    let got = loop {
        match joined.rx.try_recv() {
            Ok(e) => break e,
            Err(TryRecvError::Empty) if wrote.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => panic!("no event in 20 s: {other:?}"),
        }
    };
    assert!(matches!(&*got, LiveEvent::Line { entry: 1, .. }), "{got:?}");
    // Heard, not polled: well inside the hub's quiet wait (30 s), with room for a loaded
    // machine (a CI run beside it once took over 2 s).
    assert!(
        wrote.elapsed() < Duration::from_secs(10),
        "{:?}",
        wrote.elapsed()
    );
}
