//! Workdir snapshots and recovery evidence, persisted so a resume after a crash can use them.

use super::Engine;
use super::EngineError;
use crate::executor::{DEFAULT_IGNORE_GLOBS, Evidence, Snapshot, Stopped, recover};
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::path::Path;

/// Paths never counted as the worker's changes: oneshot's own state and git's internals.
pub(super) fn ignore_globs(workdir: &Path, state_dir: &Path) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    let mut patterns: Vec<String> = DEFAULT_IGNORE_GLOBS.iter().map(|g| g.to_string()).collect();
    let state_dir = state_dir
        .canonicalize()
        .unwrap_or_else(|_| state_dir.to_path_buf());
    if let Ok(rel) = state_dir.strip_prefix(workdir)
        && !rel.as_os_str().is_empty()
    {
        patterns.push(format!("{}/**", rel.display()));
    }
    for p in patterns {
        if let Ok(g) = Glob::new(&p) {
            b.add(g);
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

impl Engine {
    /// Takes and persists the before-snapshot of the workdir. Failing to take one is not fatal
    /// (recovery then reports no changes), but it is said.
    pub(super) fn snapshot_workdir(&mut self) -> Result<(), EngineError> {
        let path = self.dir().snapshot_path();
        match Snapshot::take(&self.file.workdir, &self.ignore) {
            Ok(snap) => {
                let bytes = serde_json::to_vec(&snap).unwrap_or_default();
                crate::store::write_atomic(&path, &bytes).map_err(|source| {
                    crate::store::StoreError::Io {
                        what: "cannot write",
                        path: path.display().to_string(),
                        source,
                    }
                })?;
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                self.warn(&format!(
                    "cannot snapshot the workdir, changes will not be detected: {e}"
                ))
            }
        }
    }

    /// What the stopped worker left: why it stopped, its codes, its output tail and the files
    /// it changed since the persisted snapshot (none known when there is no snapshot).
    pub(super) fn gather_evidence(&self, stopped: Stopped) -> Evidence {
        let tail = self.file.worker_output_tail.clone();
        let snapshot: Option<Snapshot> = std::fs::read(self.dir().snapshot_path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        match snapshot {
            Some(s) => recover(stopped, tail, &s, &self.file.workdir, &self.ignore),
            None => Evidence {
                reason: Some(stopped.reason),
                exit_code: stopped.exit_code,
                signal: stopped.signal,
                output_tail: tail,
                changed_files: Vec::new(),
                changes_source: "unavailable".to_string(),
            },
        }
    }
}
