//! The relay: the messages humans said to a job (`oneshot say JOB`, recorded in its audit
//! trail in the shared store, `crate::job::say`) posted into the inbox of the session this
//! runner runs for it, where its engine takes them in — into the running worker, or its next
//! prompt. Before the session runs, every message of the job that no worker of an earlier
//! session took in (the shipped journals say) is posted, so the session's first worker prompt
//! carries it; while it runs, each new one is posted as soon as the store says it changed.
//!
//! The store's change signal is heard by one listener per runner ([`Changes`]) for all the
//! sessions it runs: a PostgreSQL store's notifications arrive once per listening connection,
//! so two waiters would take each other's. A message is posted with the id its audit entry
//! holds, and a session's core ignores an id it holds already: posting twice is harmless,
//! and a post that failed is tried again at the next look.

use crate::job::store::{JobStore, JobStoreError};
use crate::redact::Redactor;
use crate::store::{SessionDir, StoreError};
use std::cell::Cell;
use std::collections::HashSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How long the listener waits for a change before it looks whether anyone still listens.
const LISTEN: Duration = Duration::from_millis(300);

/// The least time between two looks of one session's relay at the audit trail: a running
/// session's own shipments change the store many times a second.
const GAP: Duration = Duration::from_millis(200);

/// The most time between two looks, whatever the store says: a change missed (the listener
/// could not listen) makes a message late, never lost.
const SLOW: Duration = Duration::from_secs(5);

/// Why a look did not post every message.
#[derive(Debug, thiserror::Error)]
pub(super) enum RelayError {
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] JobStoreError),
    /// The session's inbox could not be written.
    #[error(transparent)]
    Inbox(#[from] StoreError),
    /// A message could not be redacted (a bug, said as one).
    #[error("{0}")]
    Seal(String),
}

/// The store's change signal, heard by one thread for all of a runner's relays, and only while
/// one listens.
pub(super) struct Changes {
    store: Arc<dyn JobStore>,
    /// Bumped at each change the store reports.
    tx: watch::Sender<u64>,
    /// The listener runs.
    listening: Cell<bool>,
}

impl Changes {
    pub(super) fn new(store: Arc<dyn JobStore>) -> Rc<Changes> {
        Rc::new(Changes {
            store,
            tx: watch::channel(0).0,
            listening: Cell::new(false),
        })
    }

    /// A receiver woken at each change from now on (and once when the listener starts, for
    /// what came before it listened); starts the listener on this thread's local set if none
    /// runs.
    pub(super) fn subscribe(self: &Rc<Self>) -> watch::Receiver<u64> {
        let rx = self.tx.subscribe();
        if !self.listening.replace(true) {
            let me = Rc::clone(self);
            tokio::task::spawn_local(async move { me.listen().await });
        }
        rx
    }

    async fn listen(&self) {
        let store = Arc::clone(&self.store);
        let mut since = blocking(move || store.change_seen()).await;
        // Whatever changed before the listening started is looked at once.
        self.tx.send_modify(|n| *n += 1);
        while self.tx.receiver_count() > 0 {
            let store = Arc::clone(&self.store);
            let (woken, seen) = blocking(move || {
                // Messages are audit entries: news, announced whether or not a dashboard
                // watches (the steps' progress is not, and is not this relay's business).
                let woken = store.wait_for_news(since, LISTEN);
                // Taken before anyone reads: a change after it wakes the next wait.
                (woken, store.change_seen())
            })
            .await;
            since = seen;
            if woken {
                self.tx.send_modify(|n| *n += 1);
            }
        }
        self.listening.set(false);
    }
}

/// Relays one job's messages into one session's inbox.
pub(super) struct Relay {
    store: Arc<dyn JobStore>,
    job: String,
    /// The runner's state directory, and the session there.
    state_dir: PathBuf,
    session: String,
    /// The session's directory, once opened.
    dir: Option<SessionDir>,
    redactor: Arc<Redactor>,
    /// The ids posted, or taken in by an earlier session: never posted again by this relay.
    done: HashSet<String>,
    /// The first look (which reads the journals too) went through.
    primed: bool,
}

impl Relay {
    pub(super) fn new(
        store: Arc<dyn JobStore>,
        job: &str,
        state_dir: &Path,
        session: &str,
        redactor: Arc<Redactor>,
    ) -> Relay {
        Relay {
            store,
            job: job.to_string(),
            state_dir: state_dir.to_path_buf(),
            session: session.to_string(),
            dir: None,
            redactor,
            done: HashSet::new(),
            primed: false,
        }
    }

    /// Posts the job's messages this relay has not posted: at the first look, those no
    /// session's worker took in; then each new one. Blocking (store reads, file writes). How
    /// many were posted.
    pub(super) fn look(&mut self) -> Result<usize, RelayError> {
        let audit = self.store.audit(Some(&self.job))?;
        let messages = crate::job::messages(&audit);
        if messages.iter().all(|m| self.done.contains(&m.id)) {
            self.primed = true;
            return Ok(0);
        }
        if !self.primed {
            let journals = self.store.journals(&self.job)?;
            for m in &messages {
                if crate::job::taken_in(&journals, &m.id) {
                    self.done.insert(m.id.clone());
                }
            }
            self.primed = true;
        }
        let dir = match &self.dir {
            Some(d) => d,
            None => self
                .dir
                .insert(crate::store::Store::new(&self.state_dir).open(&self.session)?),
        };
        let mut posted = 0;
        for m in messages {
            if self.done.contains(&m.id) {
                continue;
            }
            let sealed = self
                .redactor
                .seal(&m)
                .map_err(|e| RelayError::Seal(e.to_string()))?;
            dir.post(&sealed)?;
            self.done.insert(m.id);
            posted += 1;
        }
        Ok(posted)
    }

    /// [`Relay::look`] on the blocking pool, handing the relay back.
    async fn look_off_loop(mut self) -> Relay {
        let (relay, r) = blocking(move || {
            let r = self.look();
            (self, r)
        })
        .await;
        if let Err(e) = r {
            tracing::warn!(job = %relay.job, session = %relay.session, "could not hand the job's messages to its session (tried again): {e}");
        }
        relay
    }
}

/// Posts the messages waiting for session `relay` names before `work` (its run) starts, then
/// runs `work` while posting each new message as the store changes (at most every [`GAP`], at
/// least every [`SLOW`]); returns what `work` does.
pub(super) async fn alongside<T>(
    work: impl Future<Output = T>,
    relay: Relay,
    changes: &Rc<Changes>,
) -> T {
    // Listening before the first look: a message recorded after it wakes the loop.
    let mut rx = changes.subscribe();
    rx.borrow_and_update();
    let mut relay = relay.look_off_loop().await;
    let relaying = async move {
        loop {
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        // The runner went: only the slow looks are left.
                        tokio::time::sleep(SLOW).await;
                    }
                }
                () = tokio::time::sleep(SLOW) => {}
            }
            relay = relay.look_off_loop().await;
            tokio::time::sleep(GAP).await;
        }
    };
    let mut work = std::pin::pin!(work);
    tokio::select! {
        out = &mut work => out,
        // The relay loops for as long as the session runs.
        _ = relaying => work.await,
    }
}

/// Runs `f` on the blocking pool; a panic there is this thread's.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}
