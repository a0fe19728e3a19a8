//! Change detection outside git: a fingerprint of every file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use globset::GlobSet;
use serde::{Deserialize, Serialize};

use super::{Fingerprint, diff_maps};
use crate::executor::ExecError;

/// Beyond this many files the walk stops (with a warning): a workdir that large is almost
/// certainly not what the agent was meant to edit, and a snapshot must stay cheap.
const MAX_FILES: usize = 200_000;

/// Every file's fingerprint, by workdir-relative path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct TreeState {
    files: BTreeMap<String, Fingerprint>,
    /// The walk hit [`MAX_FILES`]; files past the cap are not compared.
    #[serde(default)]
    truncated: bool,
}

impl TreeState {
    /// Walks `workdir` without following symlinks, skipping `.git` directories and ignored
    /// paths. An unreadable subdirectory is skipped with a warning; an unreadable workdir is
    /// an error.
    pub(super) fn take(workdir: &Path, ignore: &GlobSet) -> Result<Self, ExecError> {
        let mut files = BTreeMap::new();
        let mut stack: Vec<(PathBuf, String)> = vec![(workdir.to_path_buf(), String::new())];
        while let Some((dir, rel_dir)) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(source) if rel_dir.is_empty() => {
                    return Err(ExecError::Scan { path: dir, source });
                }
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "skipping unreadable directory");
                    continue;
                }
            };
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name().to_string_lossy().into_owned();
                let rel = if rel_dir.is_empty() {
                    name.clone()
                } else {
                    format!("{rel_dir}/{name}")
                };
                let Ok(file_type) = entry.file_type() else {
                    continue;
                };
                if file_type.is_dir() {
                    if name != ".git" && !dir_ignored(ignore, &rel) {
                        stack.push((entry.path(), rel));
                    }
                    continue;
                }
                if ignore.is_match(&rel) {
                    continue;
                }
                // DirEntry::metadata does not follow symlinks on Unix: a link is fingerprinted
                // as itself.
                let Ok(meta) = entry.metadata() else { continue };
                files.insert(rel, Fingerprint::from(&meta));
                if files.len() >= MAX_FILES {
                    tracing::warn!(
                        workdir = %workdir.display(),
                        "workdir has more than {MAX_FILES} files; changes past them are not detected"
                    );
                    return Ok(Self {
                        files,
                        truncated: true,
                    });
                }
            }
        }
        Ok(Self {
            files,
            truncated: false,
        })
    }

    /// The same state with every path put through `names` (see [`super::Names`]).
    pub(super) fn renamed(self, names: super::Names<'_>) -> Self {
        match names {
            None => self,
            Some(_) => Self {
                files: self
                    .files
                    .into_iter()
                    .map(|(p, f)| (super::name(names, p), f))
                    .collect(),
                truncated: self.truncated,
            },
        }
    }

    /// New, modified and deleted paths between `self` (before) and `after`. When either walk
    /// was truncated, a path missing from one side may just lie past the cap, so only paths
    /// present on both sides are compared.
    pub(super) fn changed(&self, after: &TreeState) -> BTreeSet<String> {
        let mut changed = diff_maps(&self.files, &after.files);
        if self.truncated || after.truncated {
            changed.retain(|p| self.files.contains_key(p) && after.files.contains_key(p));
        }
        changed
    }
}

/// A directory is pruned when its path matches, or when everything below it would (`dir/**`
/// matches a glob such as `.oneshot/**` or `**/node_modules/**`).
fn dir_ignored(ignore: &GlobSet, rel: &str) -> bool {
    ignore.is_match(rel) || ignore.is_match(format!("{rel}/**"))
}
