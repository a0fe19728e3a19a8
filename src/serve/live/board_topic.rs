//! The board's live stream: which jobs moved. The board is a view of the store's present, so
//! its events say only *that* a job changed (its id, state and steps); the page reads the
//! board again, from the store, on each burst of them and after every reconnect — a board
//! that missed an event while offline is made whole by that read, never by the stream.

use super::event::LiveEvent;
use crate::job::store::{JobStore, JobStoreError, ListFilter};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::broadcast;

/// The least time between two reads of the whole list: a busy fleet's every write does not
/// make a 10,000-job list read each time.
pub(crate) const EVERY: Duration = Duration::from_millis(250);

/// What the board shows of a job, compared between reads.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    state: crate::job::JobState,
    steps: u32,
    updated_ms: u64,
    runner: Option<String>,
}

/// The board's topic.
pub(crate) struct BoardTopic {
    tx: broadcast::Sender<Arc<LiveEvent>>,
    state: Mutex<(HashMap<String, Seen>, Option<Instant>)>,
}

impl BoardTopic {
    /// The topic, with the store's jobs as they are now.
    pub(crate) fn open(store: &dyn JobStore, capacity: usize) -> Result<BoardTopic, JobStoreError> {
        let (tx, _) = broadcast::channel(capacity);
        Ok(BoardTopic {
            tx,
            state: Mutex::new((read(store)?, Some(Instant::now()))),
        })
    }

    /// Whether anyone reads it.
    pub(crate) fn watched(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// A reader, live from now.
    pub(crate) fn join(&self) -> broadcast::Receiver<Arc<LiveEvent>> {
        self.tx.subscribe()
    }

    /// How long until the board may be read again (zero: now).
    pub(crate) fn due_in(&self) -> Duration {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.1.map_or(Duration::ZERO, |t| EVERY.saturating_sub(t.elapsed()))
    }

    /// Reads the jobs and sends an event for each that changed, appeared or went.
    pub(crate) fn poll(&self, store: &dyn JobStore) -> Result<(), JobStoreError> {
        let now = read(store)?;
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        for (id, s) in &now {
            if st.0.get(id) != Some(s) {
                let _ = self.tx.send(Arc::new(LiveEvent::Board {
                    job: id.clone(),
                    state: Some(s.state.as_str().to_string()),
                    steps: s.steps,
                }));
            }
        }
        for id in st.0.keys().filter(|id| !now.contains_key(*id)) {
            let _ = self.tx.send(Arc::new(LiveEvent::Board {
                job: id.clone(),
                state: None,
                steps: 0,
            }));
        }
        *st = (now, Some(Instant::now()));
        Ok(())
    }
}

fn read(store: &dyn JobStore) -> Result<HashMap<String, Seen>, JobStoreError> {
    Ok(store
        .list(&ListFilter::default())?
        .into_iter()
        .map(|j| {
            (
                j.id,
                Seen {
                    state: j.state,
                    steps: j.steps,
                    updated_ms: j.updated_ms,
                    runner: j.runner,
                },
            )
        })
        .collect())
}
