//! `PolicyWatcher`: notices edits to a set of policy files, debounced, without blocking anyone.
//!
//! Editors save by writing a temp file and renaming it over the original, which replaces the
//! inode, so a watch on the file itself goes deaf after the first save. The watcher therefore
//! watches each file's *parent directory* (non-recursively) and filters the events down to the
//! files it was given. notify's callback only forwards events into a channel; a small thread
//! owns the filter and the debounce timer and publishes a batch once the files have been quiet
//! for the debounce period. The engine picks the batch up with [`PolicyWatcher::take_changed`]
//! or awaits [`ChangeSignal::changed`] in its `select!`.

use super::error::ReloadError;
use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the watched files must be quiet before a change is reported: long enough to fold
/// an editor's write + rename (or two quick saves) into one reload, short enough to keep
/// detection under a quarter of a second.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// A file rewritten without pause is still reported after this long, so a runaway writer
/// cannot postpone a reload forever.
const MAX_DELAY: Duration = Duration::from_secs(2);

/// Watches a set of files through their parent directories and reports which ones changed.
pub struct PolicyWatcher {
    // Declared first so it is dropped first: its event thread holds a sender, and the debounce
    // thread exits once every sender is gone.
    watcher: RecommendedWatcher,
    tx: mpsc::Sender<Msg>,
    files: Vec<PathBuf>,
    dirs: BTreeSet<PathBuf>,
    shared: Arc<Shared>,
}

/// A cloneable handle that resolves when a watcher has a change ready; held separately from the
/// [`ReloadingPolicy`](super::ReloadingPolicy) so awaiting it in a `select!` borrows nothing.
#[derive(Clone, Default)]
pub struct ChangeSignal {
    shared: Option<Arc<Shared>>,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<BTreeSet<PathBuf>>,
    notify: tokio::sync::Notify,
}

enum Msg {
    Event(notify::Result<Event>),
    /// The new filter: watched form of each path (canonical parent + file name) → the path as
    /// the caller gave it, which is what gets reported.
    Files(HashMap<PathBuf, PathBuf>),
}

impl PolicyWatcher {
    /// Starts watching `files` with the given quiet period (normally [`DEBOUNCE`]).
    pub fn new(files: Vec<PathBuf>, debounce: Duration) -> Result<PolicyWatcher, ReloadError> {
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared::default());
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("oneshot-policy-watch".into())
            .spawn(move || debounce_loop(&rx, &thread_shared, debounce))
            .map_err(|e| ReloadError::Watcher(notify::Error::io(e)))?;
        let event_tx = tx.clone();
        // notify's thread must never wait on us: an unbounded send is all it does.
        let watcher = notify::recommended_watcher(move |res| {
            let _ = event_tx.send(Msg::Event(res));
        })
        .map_err(ReloadError::Watcher)?;
        let mut this = PolicyWatcher {
            watcher,
            tx,
            files: Vec::new(),
            dirs: BTreeSet::new(),
            shared,
        };
        this.set_files(files)?;
        Ok(this)
    }

    /// Replaces the watched set (a reload may require new modules or drop old ones).
    ///
    /// Every file's directory must exist. On error the files whose directories could be watched
    /// are still watched.
    pub fn set_files(&mut self, files: Vec<PathBuf>) -> Result<(), ReloadError> {
        if files == self.files {
            return Ok(());
        }
        let mut filter = HashMap::new();
        let mut dirs = BTreeSet::new();
        let mut first_err = None;
        for file in &files {
            match watched_form(file) {
                Ok((dir, key)) => {
                    dirs.insert(dir);
                    filter.insert(key, file.clone());
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        // The filter goes first, so events from directories watched below are never dropped
        // for want of it.
        let _ = self.tx.send(Msg::Files(filter));
        for dir in self.dirs.difference(&dirs) {
            // The directory may be gone already, taking its watch with it.
            let _ = self.watcher.unwatch(dir);
        }
        let mut watched = BTreeSet::new();
        for dir in dirs {
            if self.dirs.contains(&dir) {
                watched.insert(dir);
                continue;
            }
            match self.watcher.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    watched.insert(dir);
                }
                Err(source) => {
                    first_err.get_or_insert(ReloadError::Watch { dir, source });
                }
            }
        }
        self.dirs = watched;
        self.files = files;
        first_err.map_or(Ok(()), Err)
    }

    /// The watched files, as given.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The files that changed since the last call, once they have been quiet for the debounce
    /// period; `None` if nothing changed. Never blocks beyond a brief lock.
    pub fn take_changed(&self) -> Option<Vec<PathBuf>> {
        let mut pending = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if pending.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut *pending).into_iter().collect())
    }

    /// Resolves once a change is ready for [`take_changed`](Self::take_changed). Cancel-safe:
    /// it consumes nothing, so dropping it in a `select!` loses no change.
    pub async fn changed(&self) {
        self.signal().changed().await;
    }

    /// A handle on the same readiness as [`changed`](Self::changed), for awaiting elsewhere.
    pub fn signal(&self) -> ChangeSignal {
        ChangeSignal {
            shared: Some(Arc::clone(&self.shared)),
        }
    }
}

impl ChangeSignal {
    /// A signal that never fires (reload off, builtin policy).
    pub fn never() -> ChangeSignal {
        ChangeSignal::default()
    }

    /// Resolves once a change is waiting; pends forever for [`ChangeSignal::never`].
    pub async fn changed(&self) {
        let Some(shared) = &self.shared else {
            return std::future::pending().await;
        };
        loop {
            // Created before the check so a change published in between still wakes us; a stale
            // permit from an already-taken change only costs one extra turn of the loop.
            let notified = shared.notify.notified();
            if !shared
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_empty()
            {
                return;
            }
            notified.await;
        }
    }
}

/// The directory to watch for `file` and the path notify will report for it.
fn watched_form(file: &Path) -> Result<(PathBuf, PathBuf), ReloadError> {
    let resolve = |source| ReloadError::Resolve {
        path: file.to_path_buf(),
        source,
    };
    let name = file
        .file_name()
        .ok_or_else(|| resolve(std::io::ErrorKind::InvalidInput.into()))?;
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // notify reports paths under the directory as it was watched; canonical on both sides so a
    // symlinked or relative directory (macOS's /tmp) still matches.
    let dir = std::fs::canonicalize(parent).map_err(resolve)?;
    let key = dir.join(name);
    Ok((dir, key))
}

/// Our own loads open and read the files; only events that can change content count.
fn relevant(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

fn debounce_loop(rx: &mpsc::Receiver<Msg>, shared: &Shared, debounce: Duration) {
    let mut filter: HashMap<PathBuf, PathBuf> = HashMap::new();
    let mut batch: BTreeSet<PathBuf> = BTreeSet::new();
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    loop {
        let msg = match first {
            None => match rx.recv() {
                Ok(msg) => msg,
                Err(_) => return,
            },
            Some(first_at) => {
                let deadline = (last + debounce).min(first_at + MAX_DELAY);
                match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(msg) => msg,
                    Err(RecvTimeoutError::Timeout) => {
                        publish(shared, &mut batch);
                        first = None;
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        };
        let hit = match msg {
            Msg::Files(f) => {
                filter = f;
                false
            }
            Msg::Event(Ok(event)) if event.need_rescan() => {
                // Events were lost (queue overflow): any file may have changed.
                batch.extend(filter.values().cloned());
                true
            }
            Msg::Event(Ok(event)) => {
                let hits: Vec<&PathBuf> = if relevant(&event.kind) {
                    event.paths.iter().filter_map(|p| filter.get(p)).collect()
                } else {
                    Vec::new()
                };
                batch.extend(hits.iter().map(|p| (*p).clone()));
                !hits.is_empty()
            }
            Msg::Event(Err(e)) => {
                tracing::warn!("policy file watcher: {e}");
                batch.extend(filter.values().cloned());
                true
            }
        };
        // Every hit restarts the quiet period, even one for a file already in the batch.
        if hit && !batch.is_empty() {
            last = Instant::now();
            first.get_or_insert(last);
        }
    }
}

fn publish(shared: &Shared, batch: &mut BTreeSet<PathBuf>) {
    if batch.is_empty() {
        return;
    }
    shared
        .pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .append(batch);
    shared.notify.notify_one();
}
