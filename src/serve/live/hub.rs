//! The hub: one thread per `serve` process that waits for the store to change — hearing it,
//! never polling an unchanged store ([`crate::job::store::Signals::wait_for_change`]) — and then has each watched
//! topic read what is new and send it to its readers. A topic nobody reads any more is
//! dropped at the next change.

use super::auth::{self, Credential, Watch};
use super::board_topic::BoardTopic;
use super::job_topic::JobTopic;
use crate::job::store::{JobStore, JobStoreError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many events a topic holds for its slowest reader before that reader is dropped (and
/// reconnects, replaying from the store).
pub(crate) const CAPACITY: usize = 1024;

/// The longest wait for a change: a store that cannot be heard (a watch that failed) is still
/// read this often while someone watches — the one read of a quiet store, a safety net.
const QUIET: Duration = Duration::from_secs(60);

/// After a failed read, the wait before the next (a store that is down is not hammered).
const AFTER_FAILURE: Duration = Duration::from_secs(1);

/// The topics of this process.
#[derive(Default)]
struct Topics {
    board: Option<Arc<BoardTopic>>,
    jobs: HashMap<String, Arc<JobTopic>>,
}

/// The open streams' credentials, and when they were last checked.
#[derive(Default)]
struct Checks {
    watches: Vec<std::sync::Weak<Watch>>,
    last: Option<std::time::Instant>,
}

/// The hub.
pub(crate) struct Hub {
    store: Arc<dyn JobStore>,
    topics: Mutex<Topics>,
    checks: Mutex<Checks>,
}

impl Hub {
    /// A hub over `store`, its thread started (it ends with the process).
    pub(crate) fn start(store: Arc<dyn JobStore>) -> Arc<Hub> {
        let hub = Arc::new(Hub {
            store,
            topics: Mutex::new(Topics::default()),
            checks: Mutex::new(Checks::default()),
        });
        let weak = Arc::downgrade(&hub);
        // Taken before the thread reads anything, so no change after this is missed.
        let since = hub.store.change_seen();
        let spawned = std::thread::Builder::new()
            .name("oneshot-live".into())
            .spawn(move || run(&weak, since));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the live stream's thread; pages will not update live");
        }
        hub
    }

    fn topics(&self) -> std::sync::MutexGuard<'_, Topics> {
        self.topics.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Job `id`'s topic (an id or a unique prefix), opened if nobody watched it. Blocking.
    pub(crate) fn job(&self, id: &str) -> Result<Arc<JobTopic>, JobStoreError> {
        if let Some(t) = self.topics().jobs.get(id) {
            return Ok(t.clone());
        }
        let topic = Arc::new(JobTopic::open(&*self.store, id, CAPACITY)?);
        // Another reader may have opened it meanwhile: keep the first, so all share one.
        Ok(self
            .topics()
            .jobs
            .entry(topic.id.clone())
            .or_insert(topic)
            .clone())
    }

    /// The board's topic, opened if nobody watched it. Blocking.
    pub(crate) fn board(&self) -> Result<Arc<BoardTopic>, JobStoreError> {
        if let Some(t) = &self.topics().board {
            return Ok(t.clone());
        }
        let topic = Arc::new(BoardTopic::open(&*self.store, CAPACITY)?);
        Ok(self.topics().board.get_or_insert(topic).clone())
    }

    /// Watches the credential a stream was opened with: its `gone` is told when the store no
    /// longer lets it in.
    pub(crate) fn watch(&self, credential: Credential) -> Arc<Watch> {
        let w = Watch::new(credential);
        let mut c = self.checks.lock().unwrap_or_else(|p| p.into_inner());
        c.watches.push(Arc::downgrade(&w));
        w
    }

    /// Checks the open streams' credentials (this round was woken by a change, or by the
    /// wait this returned) if the last check is [`auth::EVERY`] old; else how long until it
    /// may, so a change right after a check is still checked soon.
    fn recheck(&self) -> Option<Duration> {
        let mut c = self.checks.lock().unwrap_or_else(|p| p.into_inner());
        c.watches.retain(|w| w.strong_count() > 0);
        if c.watches.is_empty() {
            return None;
        }
        let wait = c
            .last
            .map_or(Duration::ZERO, |t| auth::EVERY.saturating_sub(t.elapsed()));
        if !wait.is_zero() {
            return Some(wait);
        }
        auth::recheck(&*self.store, &mut c.watches);
        c.last = Some(std::time::Instant::now());
        None
    }

    /// The store the topics read.
    pub(crate) fn store(&self) -> &dyn JobStore {
        &*self.store
    }

    /// Has every watched topic read what is new; drops the unwatched ones. How long the
    /// next wait may be at most.
    fn round(&self) -> Duration {
        let (board, jobs) = {
            let mut t = self.topics();
            t.jobs.retain(|_, topic| topic.watched());
            if t.board.as_ref().is_some_and(|b| !b.watched()) {
                t.board = None;
            }
            let jobs: Vec<Arc<JobTopic>> = t.jobs.values().cloned().collect();
            (t.board.clone(), jobs)
        };
        let mut wait = QUIET;
        for topic in jobs {
            if let Err(e) = topic.poll(&*self.store) {
                tracing::warn!(job = %topic.id, error = %e, "live stream: cannot read the job");
                wait = AFTER_FAILURE;
            }
        }
        if let Some(later) = self.recheck() {
            wait = wait.min(later);
        }
        if let Some(board) = board {
            let due = board.due_in();
            if due.is_zero() {
                if let Err(e) = board.poll(&*self.store) {
                    tracing::warn!(error = %e, "live stream: cannot read the board");
                    wait = AFTER_FAILURE;
                }
            } else {
                // Read soon, not now: the wait ends then even if nothing else changes.
                wait = wait.min(due);
            }
        }
        wait
    }
}

/// The hub's thread: read, wait for a change, read again — until the hub is gone.
fn run(hub: &std::sync::Weak<Hub>, mut since: u64) {
    loop {
        let Some(h) = hub.upgrade() else { return };
        let wait = h.round();
        let store = h.store.clone();
        drop(h);
        let failed = wait == AFTER_FAILURE;
        if failed {
            std::thread::sleep(wait);
        } else {
            store.wait_for_change(since, wait);
        }
        since = store.change_seen();
    }
}
