//! Change detection inside a git work tree: `git status` plus a fingerprint of each dirty file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::{Fingerprint, diff_maps};
use crate::executor::ExecError;

/// The work tree state before a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct GitState {
    /// The commit `HEAD` pointed at; `None` in a repository without commits.
    head: Option<String>,
    /// Dirty and untracked paths (workdir-relative) with their status code and fingerprint.
    dirty: BTreeMap<String, DirtyEntry>,
}

impl GitState {
    /// The same state with every path put through `names` (see [`super::Names`]).
    pub(super) fn renamed(self, names: super::Names<'_>) -> Self {
        match names {
            None => self,
            Some(_) => GitState {
                head: self.head,
                dirty: self
                    .dirty
                    .into_iter()
                    .map(|(p, e)| (super::name(names, p), e))
                    .collect(),
            },
        }
    }
}

/// One line of `git status --porcelain`: the `XY` code and the file's fingerprint, so a file
/// that was already dirty and is written again still counts as changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct DirtyEntry {
    status: String,
    fingerprint: Option<Fingerprint>,
}

/// A work tree that contains the workdir.
pub(super) struct Repo {
    /// The workdir's path inside the repository (`sub/dir/`, or empty at the top), which
    /// porcelain output is relative to and which is stripped from it.
    prefix: String,
    workdir: PathBuf,
}

impl Repo {
    /// `None` when `workdir` is not inside a git work tree or git is not installed.
    pub(super) fn find(workdir: &Path) -> Option<Repo> {
        // Asking git costs a process start (milliseconds, before every worker run); a
        // directory with no `.git` above it, and no GIT_DIR pointing elsewhere, is no work tree.
        if std::env::var_os("GIT_DIR").is_none()
            && crate::paths::git_root(workdir).is_none()
        {
            return None;
        }
        let out = git(workdir)
            .args(["rev-parse", "--show-toplevel", "--show-prefix"])
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        lines.next()?;
        Some(Repo {
            prefix: lines.next().unwrap_or_default().to_owned(),
            workdir: workdir.to_path_buf(),
        })
    }

    /// Reads HEAD and the dirty entries under the workdir.
    ///
    /// (See [`GitState::renamed`] for the names a stored state keeps.)
    pub(super) fn state(&self, workdir: &Path) -> Result<GitState, ExecError> {
        Ok(GitState {
            head: self.head()?,
            dirty: self.dirty(workdir)?,
        })
    }

    /// Paths changed since `before`: any difference in the dirty entries, plus every path that
    /// commits made during the run touched (an agent that commits leaves a clean status). All
    /// through `names`, as `before` was.
    pub(super) fn changed_since(
        &self,
        before: &GitState,
        workdir: &Path,
        names: super::Names<'_>,
    ) -> Result<BTreeSet<String>, ExecError> {
        let after = self.state(workdir)?.renamed(names);
        let mut changed = diff_maps(&before.dirty, &after.dirty);
        match (&before.head, &after.head) {
            (Some(old), Some(new)) if old != new => {
                let touched =
                    self.run_z(&["diff", "--name-only", "-z", "--relative", old, new])?;
                changed.extend(touched.into_iter().map(|p| super::name(names, p)));
            }
            (None, Some(new)) => {
                let touched = self.run_z(&["ls-tree", "-r", "--name-only", "-z", new])?;
                changed.extend(touched.into_iter().map(|p| super::name(names, p)));
            }
            _ => {}
        }
        Ok(changed)
    }

    fn head(&self) -> Result<Option<String>, ExecError> {
        let out = self.output(&["rev-parse", "--verify", "--quiet", "HEAD"])?;
        // Exit 1 with no output: no commits yet.
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    }

    fn dirty(&self, workdir: &Path) -> Result<BTreeMap<String, DirtyEntry>, ExecError> {
        let args = [
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--",
            ".",
        ];
        let fields = self.run_z(&args)?;
        let mut dirty = BTreeMap::new();
        let mut fields = fields.into_iter();
        while let Some(field) = fields.next() {
            let Some((status, path)) = field.split_at_checked(3) else {
                continue;
            };
            let status = status.trim_end().to_owned();
            let mut paths = vec![path.to_owned()];
            // A rename or copy is followed by its source path as a field of its own.
            if status.starts_with(['R', 'C']) {
                paths.extend(fields.next());
            }
            for path in paths {
                // Porcelain paths are relative to the repository root; a rename's source may
                // lie outside the workdir.
                let Some(rel) = path.strip_prefix(&self.prefix) else {
                    continue;
                };
                let entry = DirtyEntry {
                    status: status.clone(),
                    fingerprint: Fingerprint::of(&workdir.join(rel)),
                };
                dirty.insert(rel.to_owned(), entry);
            }
        }
        Ok(dirty)
    }

    /// Runs git and splits its NUL-terminated output.
    fn run_z(&self, args: &[&str]) -> Result<Vec<String>, ExecError> {
        let out = self.output(args)?;
        if !out.status.success() {
            return Err(self.error(args, String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(out
            .stdout
            .split(|b| *b == 0)
            .filter(|f| !f.is_empty())
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect())
    }

    fn output(&self, args: &[&str]) -> Result<std::process::Output, ExecError> {
        git(&self.workdir)
            .args(args)
            .output()
            .map_err(|e| self.error(args, &e.to_string()))
    }

    fn error(&self, args: &[&str], stderr: &str) -> ExecError {
        ExecError::Git {
            args: args.join(" "),
            workdir: self.workdir.clone(),
            stderr: stderr.to_owned(),
        }
    }
}

/// `git -C workdir` that never takes the index lock (`GIT_OPTIONAL_LOCKS=0`), so looking never
/// makes a concurrent `git commit` by the agent fail.
fn git(workdir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(workdir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(std::process::Stdio::null());
    cmd
}
