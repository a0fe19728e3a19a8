//! [`Signals`] for [`SqliteStore`]: work is this process's signal (the trait's default), and
//! other processes' writes are heard through the file system. Every commit
//! appends to the database's write-ahead log (`<file>-wal`) and a checkpoint writes the file
//! itself, so an inotify watch on the directory, kept to those two names, raises the change
//! signal on any process's write and costs nothing while the store is quiet. Readers write to
//! neither (the `-shm` index is shared memory, left out), so a dashboard's own reads never
//! wake it.

use super::SqliteStore;
use crate::job::store::Signals;
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::ffi::OsString;

impl Signals for SqliteStore {
    fn change_seen(&self) -> u64 {
        self.watch();
        self.changes.seen()
    }

    fn wait_for_change(&self, since: u64, timeout: std::time::Duration) -> bool {
        self.watch();
        self.changes.wait(since, timeout)
    }
}

impl SqliteStore {
    /// Starts watching the store's files, once; a store whose directory cannot be watched
    /// (no inotify left) is said so once and heard in this process only.
    fn watch(&self) {
        self.watcher.get_or_init(|| {
            let name = self.path.file_name().map(OsString::from)?;
            let mut wal = name.clone();
            wal.push("-wal");
            let changes = self.changes.clone();
            let dir = match self.path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => std::path::PathBuf::from("."),
            };
            let made = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                let Ok(event) = res else {
                    // An overflow or an error: changes may have been missed; look again.
                    changes.raise();
                    return;
                };
                if matches!(event.kind, EventKind::Access(_)) {
                    return;
                }
                let ours = event.paths.iter().any(|p| {
                    p.file_name()
                        .is_some_and(|f| f == name.as_os_str() || f == wal.as_os_str())
                });
                if ours {
                    changes.raise();
                }
            })
            .and_then(|mut w: RecommendedWatcher| {
                w.watch(&dir, RecursiveMode::NonRecursive).map(|()| w)
            });
            match made {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!(
                        store = %self.path.display(),
                        error = %e,
                        "cannot watch the job store for other processes' writes; a dashboard \
                         shows them when this process next writes"
                    );
                    None
                }
            }
        });
    }
}
