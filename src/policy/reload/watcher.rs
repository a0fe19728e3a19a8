//! `PolicyWatcher`: notices edits to a set of policy files, debounced, without blocking anyone.
//!
//! Editors save by writing a temp file and renaming it over the original, which replaces the
//! inode, so a watch on the file itself goes deaf after the first save. The watcher therefore
//! watches each file's *parent directory* (non-recursively) and filters the events down to the
//! files it was given. One notify watcher and one debounce thread serve every watcher in the
//! process (`hub.rs`); a batch is published once the files have been quiet for the debounce
//! period. The engine picks the batch up with [`PolicyWatcher::take_changed`]
//! or awaits [`ChangeSignal::changed`] in its `select!`.

use super::error::ReloadError;
use super::hub::{Filter, Hub, Pending};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long the watched files must be quiet before a change is reported: long enough to fold
/// an editor's write + rename (or two quick saves) into one reload, short enough to keep
/// detection under a quarter of a second.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Watches a set of files through their parent directories and reports which ones changed.
///
/// Every watcher in the process shares one notify watcher and one debounce thread (see
/// `hub.rs`), so a thousand sessions cost no more threads or inotify instances than one.
pub struct PolicyWatcher {
    hub: Arc<Hub>,
    id: u64,
    debounce: Duration,
    files: Vec<PathBuf>,
    dirs: BTreeSet<PathBuf>,
    pending: Arc<Pending>,
}

/// A cloneable handle that resolves when a watcher has a change ready; held separately from the
/// [`ReloadingPolicy`](super::ReloadingPolicy) so awaiting it in a `select!` borrows nothing.
#[derive(Clone, Default)]
pub struct ChangeSignal {
    pending: Option<Arc<Pending>>,
}

impl PolicyWatcher {
    /// Starts watching `files` with the given quiet period (normally [`DEBOUNCE`]).
    pub fn new(files: Vec<PathBuf>, debounce: Duration) -> Result<PolicyWatcher, ReloadError> {
        let hub = Hub::global()?;
        let id = hub.subscriber();
        let mut this = PolicyWatcher {
            hub,
            id,
            debounce,
            files: Vec::new(),
            dirs: BTreeSet::new(),
            pending: Arc::new(Pending::default()),
        };
        this.subscribe(files)?;
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
        self.subscribe(files)
    }

    fn subscribe(&mut self, files: Vec<PathBuf>) -> Result<(), ReloadError> {
        let mut filter = Filter::new();
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
        let (watched, err) = self.hub.subscribe(
            self.id,
            filter,
            &self.pending,
            self.debounce,
            &self.dirs,
            dirs,
        );
        self.dirs = watched;
        self.files = files;
        first_err.or(err).map_or(Ok(()), Err)
    }

    /// The watched files, as given.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The files that changed since the last call, once they have been quiet for the debounce
    /// period; `None` if nothing changed. Never blocks beyond a brief lock.
    pub fn take_changed(&self) -> Option<Vec<PathBuf>> {
        let mut pending = self.pending.lock();
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
            pending: Some(Arc::clone(&self.pending)),
        }
    }
}

impl Drop for PolicyWatcher {
    /// Ends the subscription; directories no other watcher needs are unwatched.
    fn drop(&mut self) {
        self.hub.unsubscribe(self.id, &self.dirs);
    }
}

impl ChangeSignal {
    /// A signal that never fires (reload off, builtin policy).
    pub fn never() -> ChangeSignal {
        ChangeSignal::default()
    }

    /// Resolves once a change is waiting; pends forever for [`ChangeSignal::never`].
    pub async fn changed(&self) {
        let Some(pending) = &self.pending else {
            return std::future::pending().await;
        };
        loop {
            // Created before the check so a change published in between still wakes us; a stale
            // permit from an already-taken change only costs one extra turn of the loop.
            let notified = pending.notify.notified();
            if !pending.lock().is_empty() {
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
