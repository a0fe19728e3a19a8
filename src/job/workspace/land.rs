//! The git work of `job land`: rebase the job's branch onto its source's base and publish it
//! — fast-forward the local base branch, or push the branch to the source's remote — or, for a
//! plain directory, copy the result back after checking the source did not change the same
//! files. Split in steps ([`Landing::rebase`], then [`Landing::publish`]) so that the checks
//! run on the rebased result before anything outside the job's workspace changes, and a
//! conflicted rebase can be handed to a resolver (or aborted).
//!
//! Idempotent where it can be: a land re-run after a crash finds the branch already on its
//! base (no rebase), the base already fast-forwarded (no-op), the push already done, the files
//! already copied (each is recognised as the job's own content, not a change of the source's).

use super::git::Git;
use super::provision::worktree_of;
use super::pull_request::pull_request;
use super::remote::{Mirror, shown_url};
use super::{JobSpec, SourceKind, Workspace, WorkspaceError, check_source};
use crate::job::land::{LandFailure, LandTarget, short};
use std::path::{Path, PathBuf};

/// A land under way: where the job's work is and where it goes.
#[derive(Debug, Clone)]
pub struct Landing {
    /// The job's work tree (the worktree's top, or the plain copy).
    worktree: PathBuf,
    /// The job's branch (`None` for a plain copy).
    branch: Option<String>,
    /// The commit the job's work is put on top of.
    onto: String,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// A local repository: fast-forward `branch` (at `from`) in `repo`.
    Local {
        repo: PathBuf,
        branch: String,
        from: String,
    },
    /// The base branch tracks `remote`'s `branch`: push the job's branch there.
    Remote {
        repo: PathBuf,
        remote: String,
        branch: String,
    },
    /// A plain directory: copy the changed files back.
    Plain { source: PathBuf, base: String },
    /// The job's source is a git remote: the job's pushed branch is rebased in a worktree of
    /// this machine's mirror, then the remote's base `branch` (at `from`) and the job's branch
    /// (at `tip`) are pushed in one atomic, leased push.
    Mirror {
        mirror: PathBuf,
        url: String,
        branch: String,
        from: String,
        tip: String,
    },
}

/// How a rebase went.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rebase {
    /// The job's branch is on top of the base (rebased, or already there).
    Clean,
    /// It stopped on conflicts in these files; the rebase is left in progress, for a resolver
    /// or for [`Landing::abort`].
    Conflicted(Vec<String>),
    /// A plain copy whose source changed files the job changed too.
    SourceChanged(Vec<String>),
    /// A resolver's resolution of these files was refused (the problems); the rebase was
    /// aborted.
    Unresolved(Vec<String>, Vec<String>),
}

impl Landing {
    /// Looks at the job's workspace and its source and finds where the work goes, fetching
    /// the base from the source's remote when its base branch tracks one. Changes nothing but
    /// the remote-tracking ref. Job `job_id` is landed from this machine, whose state
    /// directory is `state_dir`: for a job whose source is a git remote, the remote is fetched into this
    /// machine's mirror (`<state_dir>/mirrors/`) and the job's branch, as pushed there, is
    /// checked out detached in a worktree of its own (`<state_dir>/worktrees/<job-id>-land`,
    /// made afresh by each land) for the rebase and the checks.
    pub fn start(
        spec: &JobSpec,
        ws: &Workspace,
        job_id: &str,
        state_dir: &Path,
    ) -> Result<Landing, WorkspaceError> {
        let Some(url) = &spec.remote else {
            return Landing::start_local(spec, ws);
        };
        super::check_job_id(job_id)?;
        let (mirror, branch, tip) =
            super::remote_job::pushed_tip(spec, ws, job_id, url, state_dir)?;
        let Some(base) = ws.base_branch.clone().or_else(|| spec.base.clone()) else {
            return Err(WorkspaceError::NoBaseBranch {
                path: ws.path.clone(),
                branch,
            });
        };
        let from =
            mirror
                .remote_branch(&base)?
                .ok_or_else(|| WorkspaceError::RemoteUnreachable {
                    url: shown_url(url),
                    why: format!("it has no branch {base} to land on any more"),
                    fix: format!(
                        "push {base} there again, or land the job's branch {branch} by hand"
                    ),
                })?;
        let root = super::place::make_root(&state_dir.join("worktrees"), job_id)?;
        let wt = root.join(format!("{job_id}-land"));
        let git = mirror.git();
        // Each land starts from the branch as pushed: what an earlier land left is removed.
        if wt.exists() {
            git.cmd(&["worktree", "remove", "--force"])
                .arg(&wt)
                .spawn()?;
            if wt.exists() {
                std::fs::remove_dir_all(&wt).map_err(|e| WorkspaceError::io("removing", &wt, e))?;
            }
        }
        git.run(&["worktree", "prune"])?;
        git.cmd(&["worktree", "add", "-q", "--detach"])
            .arg(&wt)
            .arg(&tip)
            .run()?;
        Ok(Landing {
            worktree: wt,
            branch: Some(branch),
            onto: from.clone(),
            kind: Kind::Mirror {
                mirror: mirror.dir,
                url: url.clone(),
                branch: base,
                from,
                tip,
            },
        })
    }

    fn start_local(spec: &JobSpec, ws: &Workspace) -> Result<Landing, WorkspaceError> {
        if !ws.path.is_dir() {
            return Err(WorkspaceError::NotReady {
                path: ws.path.clone(),
                why: "it is gone".into(),
                fix: "nothing is left to land; `oneshot job cleanup` forgets it".into(),
            });
        }
        let Some(branch) = &ws.branch else {
            let base = super::base_of(ws)?.to_owned();
            ready(&ws.path, None)?;
            return Ok(Landing {
                worktree: ws.path.clone(),
                branch: None,
                onto: base.clone(),
                kind: Kind::Plain {
                    source: spec.source.clone(),
                    base,
                },
            });
        };
        let SourceKind::Git { root: repo } = check_source(spec)? else {
            return Err(WorkspaceError::SourceNotRepo {
                path: spec.source.clone(),
            });
        };
        let top = Git::new(&ws.path).run(&["rev-parse", "--show-toplevel"])?;
        let worktree = PathBuf::from(top.trim());
        ready(&worktree, Some(branch))?;
        let Some(base) = &ws.base_branch else {
            return Err(WorkspaceError::NoBaseBranch {
                path: worktree,
                branch: branch.clone(),
            });
        };
        let git = Git::new(&repo);
        let remote = config(&git, &format!("branch.{base}.remote"))?.filter(|r| r != ".");
        let merge = config(&git, &format!("branch.{base}.merge"))?;
        let (onto, kind) = match (remote, merge) {
            (Some(remote), Some(merge)) => {
                let upstream = merge.trim_start_matches("refs/heads/").to_owned();
                let tracking = format!("refs/remotes/{remote}/{upstream}");
                Git::for_remote(&repo)
                    .cmd(&["fetch", "--quiet", "--no-tags", &remote])
                    .arg(format!("+{merge}:{tracking}"))
                    .hint("check that the remote is reachable (`git fetch` there), then land again")
                    .run()?;
                let onto = git.run(&["rev-parse", "--verify", &tracking])?;
                (
                    onto.trim().to_owned(),
                    Kind::Remote {
                        repo: repo.clone(),
                        remote,
                        branch: upstream,
                    },
                )
            }
            _ => {
                let from = git.run(&["rev-parse", "--verify", &format!("refs/heads/{base}")])?;
                let from = from.trim().to_owned();
                (
                    from.clone(),
                    Kind::Local {
                        repo: repo.clone(),
                        branch: base.clone(),
                        from,
                    },
                )
            }
        };
        Ok(Landing {
            worktree,
            branch: Some(branch.clone()),
            onto,
            kind,
        })
    }

    /// Where the job's work is: where the checks run on the rebased result, and where a
    /// resolver works on a conflict.
    pub fn worktree(&self) -> &Path {
        &self.worktree
    }

    /// What the work goes on top of, in words (`main at 1a2b3c4d5e`, `origin/main at …`).
    pub fn onto(&self) -> String {
        match &self.kind {
            Kind::Local { branch, .. } => format!("{branch} at {}", short(&self.onto)),
            Kind::Remote { remote, branch, .. } => {
                format!("{remote}/{branch} at {}", short(&self.onto))
            }
            Kind::Plain { source, .. } => format!("{}", source.display()),
            Kind::Mirror { url, branch, .. } => {
                format!("{branch} of {} at {}", shown_url(url), short(&self.onto))
            }
        }
    }

    /// Puts the job's branch on top of the base: nothing to do when it already is; a rebase in
    /// the job's worktree otherwise, stopped on conflicts. For a plain copy, checks that the
    /// source did not change the files the job changed.
    pub fn rebase(&self) -> Result<Rebase, WorkspaceError> {
        if let Kind::Plain { source, base } = &self.kind {
            let changed = source_changes(&self.worktree, source, base)?;
            return Ok(if changed.is_empty() {
                Rebase::Clean
            } else {
                Rebase::SourceChanged(changed)
            });
        }
        let git = Git::new(&self.worktree);
        if git
            .cmd(&["merge-base", "--is-ancestor", &self.onto, "HEAD"])
            .yes()?
        {
            return Ok(Rebase::Clean);
        }
        let out = git.cmd(&["rebase", "--quiet", &self.onto]).spawn()?;
        if out.code == Some(0) {
            return Ok(Rebase::Clean);
        }
        let files = self.conflicted()?;
        if files.is_empty() {
            // Not a conflict: say what git said, and leave the branch as it was.
            let err = git.cmd(&["rebase", "--quiet", &self.onto]).failed(&out);
            let _ = self.abort();
            return Err(err);
        }
        Ok(Rebase::Conflicted(files))
    }

    /// The files of a rebase in progress that are still unmerged.
    pub fn conflicted(&self) -> Result<Vec<String>, WorkspaceError> {
        let out =
            Git::new(&self.worktree).run(&["diff", "--name-only", "-z", "--diff-filter=U"])?;
        Ok(names(&out))
    }

    /// Checks a resolver's work on the conflicted `files` against git, mid-rebase: every
    /// conflicted file is reported resolved (`reported`: each file's path and action), none
    /// holds a conflict marker any more, and the files it says it touched are the ones that
    /// changed in the work tree. The problems found, empty when it holds up.
    pub fn check_resolution(
        &self,
        files: &[String],
        reported: &[(String, String)],
    ) -> Result<Vec<String>, WorkspaceError> {
        let git = Git::new(&self.worktree);
        let mut problems = Vec::new();
        for f in files {
            match reported.iter().find(|(p, _)| p == f) {
                None => problems.push(format!("{f}: conflicted, but not in the report")),
                Some((_, a)) if a == "unresolved" => {
                    problems.push(format!("{f}: reported unresolved"))
                }
                Some((_, a)) if a == "deleted" => {
                    if self.worktree.join(f).exists() {
                        problems.push(format!("{f}: reported deleted, but it is there"));
                    }
                }
                Some(_) => {
                    let text = std::fs::read(self.worktree.join(f)).unwrap_or_default();
                    let text = String::from_utf8_lossy(&text);
                    if text.lines().any(|l| {
                        l.starts_with("<<<<<<< ") || l.starts_with(">>>>>>> ") || l == "======="
                    }) {
                        problems.push(format!("{f}: conflict markers left"));
                    }
                }
            }
        }
        // What changed in the work tree since the rebase stopped: edited, deleted, new.
        let mut changed = names(&git.run(&["diff", "--name-only", "-z"])?);
        changed.extend(names(&git.run(&[
            "ls-files",
            "--others",
            "--exclude-standard",
            "-z",
        ])?));
        for (p, _) in reported {
            if !changed.contains(p) && !files.contains(p) {
                problems.push(format!("{p}: reported, but it did not change"));
            }
        }
        for c in &changed {
            if !reported.iter().any(|(p, _)| p == c) {
                problems.push(format!("{c}: changed, but not in the report"));
            }
        }
        Ok(problems)
    }

    /// Goes on with a rebase whose conflicts are resolved in the work tree: stages them and
    /// continues; the next commit may conflict again.
    pub fn continue_rebase(&self) -> Result<Rebase, WorkspaceError> {
        let git = Git::new(&self.worktree).env("GIT_EDITOR", "true");
        git.run(&["add", "-A"])?;
        let out = git.cmd(&["rebase", "--continue"]).spawn()?;
        if out.code == Some(0) {
            return Ok(Rebase::Clean);
        }
        let files = self.conflicted()?;
        if files.is_empty() {
            return Err(git.cmd(&["rebase", "--continue"]).failed(&out));
        }
        Ok(Rebase::Conflicted(files))
    }

    /// Abandons a rebase in progress: the job's branch is back where it was.
    pub fn abort(&self) -> Result<(), WorkspaceError> {
        let git = Git::new(&self.worktree);
        if in_rebase(&git, &self.worktree)? {
            git.run(&["rebase", "--abort"])?;
        }
        Ok(())
    }

    /// The evidence of a conflicted rebase, for the job's reason.
    pub fn conflict(&self, files: Vec<String>) -> LandFailure {
        LandFailure::Conflict {
            onto: self.onto(),
            files,
            worktree: self.worktree.clone(),
        }
    }

    /// Publishes the rebased work: fast-forwards the local base branch (in the work tree that
    /// has it checked out, only when that is clean), or pushes the job's branch to the remote,
    /// or copies the changed files back into the plain source. Returns where it went and the
    /// commits landed.
    pub fn publish(&self) -> Result<(LandTarget, Vec<String>), WorkspaceError> {
        let git = Git::new(&self.worktree);
        let head = match &self.kind {
            Kind::Plain { .. } => String::new(),
            _ => git.run(&["rev-parse", "HEAD"])?.trim().to_owned(),
        };
        let commits = |git: &Git| -> Result<Vec<String>, WorkspaceError> {
            let out = git.run(&["rev-list", "--reverse", &head, "--not", &self.onto])?;
            Ok(out.lines().map(str::to_owned).collect())
        };
        match &self.kind {
            Kind::Local { repo, branch, from } => {
                let commits = commits(&git)?;
                fast_forward(repo, branch, from, &head)?;
                Ok((
                    LandTarget::Branch {
                        branch: branch.clone(),
                        from: from.clone(),
                        to: head,
                    },
                    commits,
                ))
            }
            Kind::Remote {
                repo,
                remote,
                branch,
            } => {
                let commits = commits(&git)?;
                let job_branch = self.branch.clone().unwrap_or_default();
                let pushed_ref = format!("refs/heads/{job_branch}");
                // The job's branch is oneshot's own: a re-land after a human's rebase replaces
                // what an earlier land pushed.
                Git::for_remote(repo)
                    .cmd(&["push", "--quiet", remote])
                    .arg(format!("+{head}:{pushed_ref}"))
                    .hint(
                        "check that you may push to the remote (`git push` there), then land again",
                    )
                    .run()?;
                // Remember it as pushed even when the remote's fetch refspec does not map it,
                // so `job cleanup` knows the work is safe.
                Git::new(repo)
                    .cmd(&[
                        "update-ref",
                        &format!("refs/remotes/{remote}/{job_branch}"),
                        &head,
                    ])
                    .run()?;
                let url = Git::for_remote(repo).run(&["remote", "get-url", remote])?;
                Ok((
                    LandTarget::Remote {
                        remote: remote.clone(),
                        branch: branch.clone(),
                        onto: self.onto.clone(),
                        pushed_ref,
                        head,
                        pull_request: pull_request(remote, url.trim(), branch, &job_branch),
                    },
                    commits,
                ))
            }
            Kind::Mirror {
                mirror,
                url,
                branch,
                from,
                tip,
            } => {
                let commits = commits(&git)?;
                let job_branch = self.branch.clone().unwrap_or_default();
                // One atomic push, each ref leased on what was fetched: the base only moves
                // from `from` (a compare-and-swap; another land in between refuses this one)
                // and the job's branch only from its pushed `tip`.
                let mirror = Mirror {
                    dir: mirror.clone(),
                    url: url.clone(),
                };
                mirror.push(
                    &self.worktree,
                    &[
                        format!("HEAD:refs/heads/{branch}"),
                        format!("HEAD:refs/heads/{job_branch}"),
                    ],
                    &[
                        (branch.clone(), Some(from.clone())),
                        (job_branch.clone(), Some(tip.clone())),
                    ],
                )?;
                // Landed: the scratch worktree has served (best effort; the next land of
                // this job would remove it anyway).
                let _ = mirror
                    .git()
                    .cmd(&["worktree", "remove", "--force"])
                    .arg(&self.worktree)
                    .spawn();
                Ok((
                    LandTarget::Branch {
                        branch: branch.clone(),
                        from: from.clone(),
                        to: head,
                    },
                    commits,
                ))
            }
            Kind::Plain { source, base } => {
                let files = copy_back(&self.worktree, source, base)?;
                Ok((
                    LandTarget::Directory {
                        path: source.clone(),
                        files,
                    },
                    Vec::new(),
                ))
            }
        }
    }
}

/// Refuses a work tree with uncommitted changes, a rebase in progress or another branch
/// checked out: a land rebases and publishes commits, and would miss or mangle those.
fn ready(worktree: &Path, branch: Option<&str>) -> Result<(), WorkspaceError> {
    let git = Git::new(worktree);
    let not_ready = |why: String, fix: String| WorkspaceError::NotReady {
        path: worktree.to_owned(),
        why,
        fix,
    };
    if in_rebase(&git, worktree)? {
        return Err(not_ready(
            "a rebase is in progress there".into(),
            "finish it (`git rebase --continue`) or abort it (`git rebase --abort`)".into(),
        ));
    }
    if let Some(branch) = branch {
        let head = git.cmd(&["symbolic-ref", "-q", "HEAD"]).spawn()?;
        if head.stdout.trim() != format!("refs/heads/{branch}") {
            return Err(not_ready(
                format!("it is not on the job's branch {branch}"),
                format!("`git switch {branch}` there"),
            ));
        }
    }
    let status = git.run(&["status", "--porcelain", "-z", "--untracked-files=all"])?;
    let files = status_files(&status);
    if !files.is_empty() {
        return Err(not_ready(
            format!("uncommitted changes in {}", some(&files)),
            "commit them there (`git commit -am …`) or discard them".into(),
        ));
    }
    Ok(())
}

fn in_rebase(git: &Git, worktree: &Path) -> Result<bool, WorkspaceError> {
    for dir in ["rebase-merge", "rebase-apply"] {
        let p = git.run(&["rev-parse", "--git-path", dir])?;
        if worktree.join(p.trim()).exists() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A configuration value of the repository, `None` when unset.
fn config(git: &Git, key: &str) -> Result<Option<String>, WorkspaceError> {
    let out = git.cmd(&["config", "--get", key]).spawn()?;
    Ok((out.code == Some(0)).then(|| out.stdout.trim().to_owned()))
}

/// Moves `branch` from `from` to `head` (a descendant): with `merge --ff-only` in the work tree
/// that has it checked out, if that is clean; with a compare-and-swap `update-ref` otherwise.
fn fast_forward(repo: &Path, branch: &str, from: &str, head: &str) -> Result<(), WorkspaceError> {
    let git = Git::new(repo);
    let branch_ref = format!("refs/heads/{branch}");
    let now = git.run(&["rev-parse", "--verify", &branch_ref])?;
    if now.trim() == head {
        // Landed already (a re-run after a crash).
        return Ok(());
    }
    match worktree_of(&git, &branch_ref)? {
        Some(wt) if wt.exists() => {
            let there = Git::new(&wt);
            let status = there.run(&["status", "--porcelain", "-z", "--untracked-files=no"])?;
            let files = status_files(&status);
            if !files.is_empty() {
                return Err(WorkspaceError::BaseDirty {
                    path: wt,
                    branch: branch.to_owned(),
                    files: some(&files),
                });
            }
            there
                .cmd(&["merge", "--ff-only", "--quiet", head])
                .hint("an untracked file there may be in the way; move it, then land again")
                .run()?;
        }
        _ => {
            let message = format!("oneshot: land {}", short(head));
            git.run(&["update-ref", "-m", &message, &branch_ref, head, from])?;
        }
    }
    Ok(())
}

/// The files a plain copy's job changed (from the baseline `base` to its `HEAD`) that the
/// source changed too since the copy: neither the baseline's content nor the job's (which a
/// land that stopped halfway already wrote).
fn source_changes(copy: &Path, source: &Path, base: &str) -> Result<Vec<String>, WorkspaceError> {
    let git = Git::new(copy);
    let mut changed = Vec::new();
    for file in job_files(&git, base)? {
        let was = blob(&git, base, &file)?;
        let ours = blob(&git, "HEAD", &file)?;
        let now = source_blob(&git, &source.join(&file))?;
        if now != was && now != ours {
            changed.push(file);
        }
    }
    Ok(changed)
}

/// The files the job changed since the baseline.
fn job_files(git: &Git, base: &str) -> Result<Vec<String>, WorkspaceError> {
    let out = git.run(&["diff", "--name-only", "-z", "--no-renames", base, "HEAD"])?;
    Ok(names(&out))
}

/// The blob id of `file` at `rev`, `None` when it is not there.
fn blob(git: &Git, rev: &str, file: &str) -> Result<Option<String>, WorkspaceError> {
    let out = git
        .cmd(&["rev-parse", "--verify", "--quiet"])
        .arg(format!("{rev}:{file}"))
        .spawn()?;
    Ok((out.code == Some(0)).then(|| out.stdout.trim().to_owned()))
}

/// The blob id the file at `path` would have, `None` when there is none.
fn source_blob(git: &Git, path: &Path) -> Result<Option<String>, WorkspaceError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(_) => return Ok(None),
    };
    if meta.is_symlink() {
        // A link's blob is its target's text: hash that, written to a scratch file.
        let target =
            std::fs::read_link(path).map_err(|e| WorkspaceError::io("reading", path, e))?;
        let scratch = std::env::temp_dir().join(format!("oneshot-link-{}", std::process::id()));
        std::fs::write(&scratch, target.as_os_str().as_encoded_bytes())
            .map_err(|e| WorkspaceError::io("writing", &scratch, e))?;
        let id = git
            .cmd(&["hash-object", "--no-filters", "--"])
            .arg(&scratch)
            .run();
        let _ = std::fs::remove_file(&scratch);
        return Ok(Some(id?.trim().to_owned()));
    }
    if !meta.is_file() {
        return Ok(Some(String::from("(not a file)")));
    }
    let id = git
        .cmd(&["hash-object", "--no-filters", "--"])
        .arg(path)
        .run()?;
    Ok(Some(id.trim().to_owned()))
}

/// Writes the job's version of each file it changed into the source (each through a
/// temporary file renamed into place), removes the ones it deleted; the list of them.
fn copy_back(copy: &Path, source: &Path, base: &str) -> Result<Vec<String>, WorkspaceError> {
    let git = Git::new(copy);
    let files = job_files(&git, base)?;
    for file in &files {
        let from = copy.join(file);
        let to = source.join(file);
        let meta = std::fs::symlink_metadata(&from).ok();
        match meta {
            None => match std::fs::remove_file(&to) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(WorkspaceError::io("removing", &to, e)),
            },
            Some(meta) => {
                if let Some(dir) = to.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| WorkspaceError::io("creating", dir, e))?;
                }
                let name = to
                    .file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default();
                let tmp = to.with_file_name(format!(".{name}.oneshot-land"));
                let _ = std::fs::remove_file(&tmp);
                if meta.is_symlink() {
                    let target = std::fs::read_link(&from)
                        .map_err(|e| WorkspaceError::io("reading", &from, e))?;
                    std::os::unix::fs::symlink(&target, &tmp)
                        .map_err(|e| WorkspaceError::io("creating symlink", &tmp, e))?;
                } else {
                    std::fs::copy(&from, &tmp)
                        .map_err(|e| WorkspaceError::io("copying", &from, e))?;
                }
                std::fs::rename(&tmp, &to).map_err(|e| WorkspaceError::io("renaming", &tmp, e))?;
            }
        }
    }
    Ok(files)
}

/// NUL-separated names.
fn names(out: &str) -> Vec<String> {
    out.split('\0')
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The paths of `status --porcelain -z` output.
fn status_files(status: &str) -> Vec<String> {
    status
        .split('\0')
        .filter(|f| f.len() > 3)
        .map(|f| f[3..].to_owned())
        .collect()
}

/// The first few of a list, and how many more.
fn some(files: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = files[..files.len().min(SHOWN)].join(", ");
    if files.len() > SHOWN {
        s.push_str(&format!(" and {} more", files.len() - SHOWN));
    }
    s
}
