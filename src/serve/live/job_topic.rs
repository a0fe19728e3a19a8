//! One job's live stream, shared by every reader of its page in this process: the hub reads
//! what the store added past the topic's cursor and sends it once to all of them; a reader
//! that joins from an older cursor gets the difference replayed from the store first.

use super::cursor::Cursor;
use super::event::LiveEvent;
use crate::job::store::{JobStore, JobStoreError};
use crate::serve::pages::Account;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// Entries read per store call.
const PAGE: usize = 500;

/// A job's topic.
pub(crate) struct JobTopic {
    /// The job's full id.
    pub id: String,
    tx: broadcast::Sender<Arc<LiveEvent>>,
    state: Mutex<State>,
}

/// What the topic has sent, and how it renders what comes next.
struct State {
    at: Cursor,
    /// The job's last change as the store stamped it, and its lease holder: a change to
    /// either without a transition (a land, a lease handed back) is news too.
    seen: (u64, Option<String>),
    /// Each session's account renderer, fed every entry up to the cursor.
    accounts: HashMap<String, Account>,
}

/// What a new reader gets: the events from its cursor to the topic's, then the live ones.
pub(crate) struct Joined {
    /// The replay, oldest first.
    pub replay: Vec<Arc<LiveEvent>>,
    /// Every event after the replay.
    pub rx: broadcast::Receiver<Arc<LiveEvent>>,
}

impl JobTopic {
    /// The topic of job `id` (an id or a unique prefix), its cursor where the store stands.
    pub(crate) fn open(
        store: &dyn JobStore,
        id: &str,
        capacity: usize,
    ) -> Result<JobTopic, JobStoreError> {
        let job = store.get(id)?;
        let transitions = store.history(&job.id)?.len() as u64;
        let lease = store.lease(&job.id)?.map(|l| l.runner);
        let mut accounts = HashMap::new();
        let entries = feed(store, &job.id, 0, u64::MAX, &mut accounts, |_, _, _| {})?;
        let (tx, _) = broadcast::channel(capacity);
        Ok(JobTopic {
            id: job.id,
            tx,
            state: Mutex::new(State {
                at: Cursor {
                    transitions,
                    entries,
                },
                seen: (job.updated_ms, lease),
                accounts,
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether anyone reads it.
    pub(crate) fn watched(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// Reads what the store added since the cursor and sends it: each entry's lines, then
    /// one job event if the job itself moved.
    pub(crate) fn poll(&self, store: &dyn JobStore) -> Result<(), JobStoreError> {
        let mut st = self.state();
        let State { at, accounts, .. } = &mut *st;
        let from = at.entries;
        let transitions = at.transitions;
        let tx = &self.tx;
        let last = feed(
            store,
            &self.id,
            from,
            u64::MAX,
            accounts,
            |session, entry, html| {
                let _ = tx.send(Arc::new(LiveEvent::Line {
                    at: Cursor {
                        transitions,
                        entries: entry,
                    },
                    session: session.to_string(),
                    entry,
                    html,
                }));
            },
        )?;
        st.at.entries = last;
        let job = store.get(&self.id)?;
        let count = store.history(&self.id)?.len() as u64;
        let seen = (job.updated_ms, store.lease(&self.id)?.map(|l| l.runner));
        if count != st.at.transitions || seen != st.seen {
            st.at.transitions = count;
            st.seen = seen;
            let _ = self.tx.send(Arc::new(LiveEvent::Job {
                at: st.at,
                state: job.state().as_str().to_string(),
                steps: job.steps,
            }));
        }
        Ok(())
    }

    /// Joins a reader that has seen `after` (`None`: nothing to replay, live from now): the
    /// subscription and the topic's cursor are taken together, so the replay (read from the
    /// store up to that cursor) and the live events meet with nothing between and nothing
    /// twice.
    pub(crate) fn join(
        &self,
        store: &dyn JobStore,
        after: Option<Cursor>,
    ) -> Result<Joined, JobStoreError> {
        let (rx, at) = {
            let st = self.state();
            (self.tx.subscribe(), st.at)
        };
        let Some(after) = after.map(|a| a.min(at)) else {
            return Ok(Joined {
                replay: Vec::new(),
                rx,
            });
        };
        let mut replay = Vec::new();
        if after.entries < at.entries {
            let mut accounts = HashMap::new();
            feed(
                store,
                &self.id,
                0,
                at.entries,
                &mut accounts,
                |session, entry, html| {
                    if entry > after.entries {
                        replay.push(Arc::new(LiveEvent::Line {
                            at: Cursor {
                                transitions: after.transitions,
                                entries: entry,
                            },
                            session: session.to_string(),
                            entry,
                            html,
                        }));
                    }
                },
            )?;
        }
        if after.transitions < at.transitions {
            let job = store.get(&self.id)?;
            replay.push(Arc::new(LiveEvent::Job {
                at,
                state: job.state().as_str().to_string(),
                steps: job.steps,
            }));
        }
        Ok(Joined { replay, rx })
    }
}

/// Feeds the job's entries numbered past `from`, up to `upto`, to their sessions' accounts,
/// calling `sent(session, entry, html)` for each entry that rendered lines; the number of the
/// last entry fed (`from` if none).
fn feed(
    store: &dyn JobStore,
    id: &str,
    from: u64,
    upto: u64,
    accounts: &mut HashMap<String, Account>,
    mut sent: impl FnMut(&str, u64, String),
) -> Result<u64, JobStoreError> {
    let mut last = from;
    loop {
        let page = store.session_entries(id, last, PAGE)?;
        let full = page.len() == PAGE;
        for e in page {
            if e.seq > upto {
                return Ok(last);
            }
            let account = accounts
                .entry(e.session.clone())
                .or_insert_with(|| Account::of(&e.session));
            account.record(e.seq, &e.record);
            let html = account.take();
            if !html.is_empty() {
                sent(&e.session, e.seq, html);
            }
            last = e.seq;
        }
        if !full {
            return Ok(last);
        }
    }
}
