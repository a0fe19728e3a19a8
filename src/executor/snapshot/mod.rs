//! What the workdir looked like before a run, so `recover()` can list what the agent changed —
//! even after oneshot itself crashed, since a snapshot is plain serde data kept in the session
//! directory.

mod git;
mod walk;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use super::ExecError;

/// Globs that are never reported as changes: oneshot's own files and git's internals.
pub const DEFAULT_IGNORE_GLOBS: &[&str] = &[".oneshot/**", ".git/**"];

/// [`DEFAULT_IGNORE_GLOBS`] compiled, with `*` not crossing `/`.
pub fn default_ignore() -> GlobSet {
    let mut set = GlobSetBuilder::new();
    for pattern in DEFAULT_IGNORE_GLOBS {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .expect("built-in ignore globs are valid");
        set.add(glob);
    }
    set.build().expect("built-in ignore globs compile")
}

/// A cheap stand-in for a file's content: size and modification time. Enough to notice that
/// an agent wrote to a file, without hashing a large workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Fingerprint {
    size: u64,
    mtime_ns: i64,
}

impl Fingerprint {
    /// Reads `path` without following a symlink; `None` when it does not exist.
    fn of(path: &Path) -> Option<Self> {
        std::fs::symlink_metadata(path).ok().map(|m| Self::from(&m))
    }
}

impl From<&std::fs::Metadata> for Fingerprint {
    fn from(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            size: meta.size(),
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
        }
    }
}

/// The state of a workdir before a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    #[serde(flatten)]
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
enum Kind {
    /// Inside a git work tree: the commit and the dirty entries are enough, since everything
    /// else is, by definition, equal to that commit.
    Git(git::GitState),
    /// Anywhere else: every file's fingerprint.
    Snapshot(walk::TreeState),
}

impl Snapshot {
    /// Records `workdir`. Uses git when `workdir` is inside a work tree (`git` on PATH and
    /// `git rev-parse --show-toplevel` succeeds), otherwise walks the tree, skipping `.git`
    /// and paths matching `ignore`, up to 200,000 files.
    ///
    /// Runs synchronously (git or a directory walk); call it before spawning, not in a hot loop.
    pub fn take(workdir: &Path, ignore: &GlobSet) -> Result<Snapshot, ExecError> {
        Snapshot::take_with(workdir, ignore, None)
    }

    /// [`Snapshot::take`] with every path put through `names`: a file named after a secret is
    /// kept under its redacted name, so the snapshot file holds no secret.
    pub fn take_with(
        workdir: &Path,
        ignore: &GlobSet,
        names: Names<'_>,
    ) -> Result<Snapshot, ExecError> {
        let kind = match git::Repo::find(workdir) {
            Some(repo) => Kind::Git(repo.state(workdir)?.renamed(names)),
            None => Kind::Snapshot(walk::TreeState::take(workdir, ignore)?.renamed(names)),
        };
        Ok(Snapshot { kind })
    }

    /// `"git"` or `"snapshot"`: how changes will be detected.
    pub fn source(&self) -> &'static str {
        match self.kind {
            Kind::Git(_) => "git",
            Kind::Snapshot(_) => "snapshot",
        }
    }

    /// Paths (relative to `workdir`, sorted) that were created, modified or deleted since the
    /// snapshot, minus those matching `ignore`, and how they were found (`"git"` or
    /// `"snapshot"`). In git mode this includes files changed by commits made during the run
    /// and files that were already dirty and were written again.
    pub fn changed_files(
        &self,
        workdir: &Path,
        ignore: &GlobSet,
    ) -> Result<(Vec<String>, &'static str), ExecError> {
        self.changed_files_with(workdir, ignore, None)
    }

    /// [`Snapshot::changed_files`] for a snapshot taken with [`Snapshot::take_with`]: the
    /// workdir as it is now goes through the same `names`, and so do the paths returned.
    pub fn changed_files_with(
        &self,
        workdir: &Path,
        ignore: &GlobSet,
        names: Names<'_>,
    ) -> Result<(Vec<String>, &'static str), ExecError> {
        let changed: BTreeSet<String> = match &self.kind {
            Kind::Git(before) => {
                let repo = git::Repo::find(workdir).ok_or_else(|| ExecError::Git {
                    args: "rev-parse --show-toplevel".into(),
                    workdir: workdir.to_path_buf(),
                    stderr: "the workdir is no longer inside a git work tree".into(),
                })?;
                repo.changed_since(before, workdir, names)?
            }
            Kind::Snapshot(before) => {
                let after = walk::TreeState::take(workdir, ignore)?.renamed(names);
                before.changed(&after)
            }
        };
        let files = changed
            .into_iter()
            .filter(|p| !ignore.is_match(p))
            .collect();
        Ok((files, self.source()))
    }
}

/// What a stored path is called: itself, or — given a redactor — itself with any secret in it
/// redacted.
pub type Names<'a> = Option<&'a crate::pipeline::Redactor>;

/// `path` as [`Names`] call it.
fn name(names: Names<'_>, path: String) -> String {
    match names {
        Some(r) => match r.redact(&path) {
            std::borrow::Cow::Borrowed(_) => path,
            std::borrow::Cow::Owned(redacted) => redacted,
        },
        None => path,
    }
}

/// Paths whose entry differs between two maps: added, removed or changed.
fn diff_maps<V: PartialEq>(
    before: &BTreeMap<String, V>,
    after: &BTreeMap<String, V>,
) -> BTreeSet<String> {
    let mut changed: BTreeSet<String> = before
        .iter()
        .filter(|(path, v)| after.get(*path) != Some(v))
        .map(|(path, _)| path.clone())
        .collect();
    changed.extend(
        after
            .keys()
            .filter(|path| !before.contains_key(*path))
            .cloned(),
    );
    changed
}
