//! The process's one file watcher: a notify watcher and a debounce thread shared by every
//! [`PolicyWatcher`](super::PolicyWatcher).
//!
//! A `job run` holds a thousand sessions, each reloading its own policy. A notify watcher
//! apiece would cost two threads and one inotify instance each — and Linux allows a user 128
//! instances by default, so the 129th session would fail to watch at all. Instead every
//! watcher subscribes here: directories are watched once, counted by how many subscribers need
//! them, and one thread filters events by each subscriber's files and debounces each on its
//! own clock.

use super::error::ReloadError;
use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A file rewritten without pause is still reported after this long, so a runaway writer
/// cannot postpone a reload forever.
const MAX_DELAY: Duration = Duration::from_secs(2);

/// What a subscriber is told: the files that changed, once quiet. Owned by the watcher that
/// subscribed and read through its `take_changed`/`ChangeSignal`.
#[derive(Default)]
pub(super) struct Pending {
    pub files: Mutex<BTreeSet<PathBuf>>,
    pub notify: tokio::sync::Notify,
}

impl Pending {
    pub fn lock(&self) -> MutexGuard<'_, BTreeSet<PathBuf>> {
        // A set of paths: nothing a panic could leave half-written.
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One subscriber's filter: the watched form of each path (canonical parent + file name) → the
/// path as the subscriber gave it, which is what gets reported.
pub(super) type Filter = HashMap<PathBuf, PathBuf>;

enum Msg {
    Event(notify::Result<Event>),
    /// Subscribes `id`, or replaces its filter.
    Files {
        id: u64,
        filter: Filter,
        pending: Arc<Pending>,
        debounce: Duration,
    },
    Unsubscribe(u64),
}

/// The shared watcher. Subscriptions and directory watches change under its lock; the
/// debounce thread only ever receives messages.
pub(super) struct Hub {
    inner: Mutex<Inner>,
}

struct Inner {
    watcher: RecommendedWatcher,
    /// Each watched directory and how many subscribers need it.
    dirs: HashMap<PathBuf, usize>,
    tx: mpsc::Sender<Msg>,
    next_id: u64,
}

impl Hub {
    /// The process's hub, started on first use. A failure to start (no inotify instance left)
    /// is returned, and the next watcher tries again.
    pub fn global() -> Result<Arc<Hub>, ReloadError> {
        static GLOBAL: Mutex<Option<Arc<Hub>>> = Mutex::new(None);
        let mut slot = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hub) = &*slot {
            return Ok(Arc::clone(hub));
        }
        let hub = Arc::new(Hub::start()?);
        *slot = Some(Arc::clone(&hub));
        Ok(hub)
    }

    fn start() -> Result<Hub, ReloadError> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("policy-watch".into())
            .spawn(move || debounce_loop(&rx))
            .map_err(|e| ReloadError::Watcher(notify::Error::io(e)))?;
        let event_tx = tx.clone();
        // notify's thread must never wait on us: an unbounded send is all it does.
        let watcher = notify::recommended_watcher(move |res| {
            let _ = event_tx.send(Msg::Event(res));
        })
        .map_err(ReloadError::Watcher)?;
        Ok(Hub {
            inner: Mutex::new(Inner {
                watcher,
                dirs: HashMap::new(),
                tx,
                next_id: 0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new subscriber's id.
    pub fn subscriber(&self) -> u64 {
        let mut inner = self.lock();
        inner.next_id += 1;
        inner.next_id
    }

    /// Sets subscriber `id`'s files to `filter`, watching the directories `dirs` in place of
    /// `old_dirs`. Returns the directories now watched for it and the first error; the ones
    /// that could be watched are watched.
    pub fn subscribe(
        &self,
        id: u64,
        filter: Filter,
        pending: &Arc<Pending>,
        debounce: Duration,
        old_dirs: &BTreeSet<PathBuf>,
        dirs: BTreeSet<PathBuf>,
    ) -> (BTreeSet<PathBuf>, Option<ReloadError>) {
        let mut inner = self.lock();
        // The filter goes first, so events from directories watched below are never dropped
        // for want of it: both travel the same channel.
        let _ = inner.tx.send(Msg::Files {
            id,
            filter,
            pending: Arc::clone(pending),
            debounce,
        });
        for dir in old_dirs.difference(&dirs) {
            inner.release(dir);
        }
        let mut watched = BTreeSet::new();
        let mut first_err = None;
        for dir in dirs {
            if old_dirs.contains(&dir) {
                watched.insert(dir);
                continue;
            }
            match inner.acquire(&dir) {
                Ok(()) => {
                    watched.insert(dir);
                }
                Err(source) => {
                    first_err.get_or_insert(ReloadError::Watch { dir, source });
                }
            }
        }
        (watched, first_err)
    }

    /// Ends subscriber `id`, releasing its directories.
    pub fn unsubscribe(&self, id: u64, dirs: &BTreeSet<PathBuf>) {
        let mut inner = self.lock();
        let _ = inner.tx.send(Msg::Unsubscribe(id));
        for dir in dirs {
            inner.release(dir);
        }
    }
}

impl Inner {
    fn acquire(&mut self, dir: &PathBuf) -> Result<(), notify::Error> {
        if let Some(n) = self.dirs.get_mut(dir) {
            *n += 1;
            return Ok(());
        }
        self.watcher.watch(dir, RecursiveMode::NonRecursive)?;
        self.dirs.insert(dir.clone(), 1);
        Ok(())
    }

    fn release(&mut self, dir: &PathBuf) {
        let Some(n) = self.dirs.get_mut(dir) else {
            return;
        };
        *n -= 1;
        if *n == 0 {
            self.dirs.remove(dir);
            // The directory may be gone already, taking its watch with it.
            let _ = self.watcher.unwatch(dir);
        }
    }
}

/// One subscriber as the debounce thread sees it.
struct Sub {
    filter: Filter,
    pending: Arc<Pending>,
    debounce: Duration,
    batch: BTreeSet<PathBuf>,
    /// When the batch's first and latest hits came; `first` is `None` with nothing batched.
    first: Option<Instant>,
    last: Instant,
}

impl Sub {
    /// When this batch is due: quiet for the debounce period, or held for `MAX_DELAY`.
    fn due(&self) -> Option<Instant> {
        self.first
            .map(|first| (self.last + self.debounce).min(first + MAX_DELAY))
    }

    fn hit(&mut self, files: impl IntoIterator<Item = PathBuf>) {
        let mut any = false;
        for f in files {
            any = true;
            self.batch.insert(f);
        }
        // Every hit restarts the quiet period, even one for a file already in the batch.
        if any {
            self.last = Instant::now();
            self.first.get_or_insert(self.last);
        }
    }

    /// Every watched file, at once: events were lost, so any of them may have changed.
    fn hit_all(&mut self) {
        let all: Vec<PathBuf> = self.filter.values().cloned().collect();
        self.hit(all);
    }

    fn publish(&mut self) {
        self.first = None;
        if self.batch.is_empty() {
            return;
        }
        self.pending.lock().append(&mut self.batch);
        self.pending.notify.notify_one();
    }
}

/// Our own loads open and read the files; only events that can change content count.
fn relevant(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

fn debounce_loop(rx: &mpsc::Receiver<Msg>) {
    let mut subs: HashMap<u64, Sub> = HashMap::new();
    loop {
        let now = Instant::now();
        for sub in subs.values_mut() {
            if sub.due().is_some_and(|at| at <= now) {
                sub.publish();
            }
        }
        let next = subs.values().filter_map(Sub::due).min();
        let msg = match next {
            None => match rx.recv() {
                Ok(msg) => msg,
                Err(_) => return,
            },
            Some(at) => match rx.recv_timeout(at.saturating_duration_since(now)) {
                Ok(msg) => msg,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            },
        };
        match msg {
            Msg::Files {
                id,
                filter,
                pending,
                debounce,
            } => match subs.get_mut(&id) {
                Some(sub) => {
                    sub.filter = filter;
                    sub.debounce = debounce;
                }
                None => {
                    subs.insert(
                        id,
                        Sub {
                            filter,
                            pending,
                            debounce,
                            batch: BTreeSet::new(),
                            first: None,
                            last: now,
                        },
                    );
                }
            },
            Msg::Unsubscribe(id) => {
                subs.remove(&id);
            }
            Msg::Event(Ok(event)) if event.need_rescan() => {
                // The kernel's queue overflowed.
                subs.values_mut().for_each(Sub::hit_all);
            }
            Msg::Event(Ok(event)) => {
                if relevant(&event.kind) {
                    for sub in subs.values_mut() {
                        let hits: Vec<PathBuf> = event
                            .paths
                            .iter()
                            .filter_map(|p| sub.filter.get(p).cloned())
                            .collect();
                        sub.hit(hits);
                    }
                }
            }
            Msg::Event(Err(e)) => {
                tracing::warn!("policy file watcher: {e}");
                subs.values_mut().for_each(Sub::hit_all);
            }
        }
    }
}
