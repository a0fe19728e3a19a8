//! The workspace of a job whose source is a git remote: provisioned from this machine's
//! mirror of it (starting from the job's branch when a runner pushed it already — how another
//! machine recovers a job's work), pushed back at each harvest, and read back by `job diff`
//! on any machine.

use super::place::{make_dirs, make_root};
use super::provision::{backoff, check_out, resolve};
use super::remote::{Mirror, masked, prefix_of, shown_url};
use super::{JobSpec, Workspace, WorkspaceError, check_job_id};
use std::path::Path;

/// How often a provision that lost a race for one of git's lock files is tried in all.
const ATTEMPTS: u32 = 8;

/// Makes (or finds again) job `job_id`'s worktree at `<state_dir>/worktrees/<job-id>` from
/// the mirror of `url` at `<state_dir>/mirrors/`, fetched first. The branch starts from the
/// remote's copy of the job's branch when there is one (the work a runner pushed), else from
/// the base. The base commit is `recorded` — the one the job's first provisioning used, kept in
/// its workspace record — when given, else the remote's base branch as fetched.
pub fn provision(
    job_id: &str,
    spec: &JobSpec,
    url: &str,
    state_dir: &Path,
    recorded: Option<&str>,
) -> Result<Workspace, WorkspaceError> {
    check_job_id(job_id)?;
    let root = make_root(&state_dir.join("worktrees"), job_id)?;
    let mirror = Mirror::open(&state_dir.join("mirrors"), url)?;
    mirror.fetch()?;
    let git = mirror.git();
    let branch = spec.branch_of(job_id);
    let pushed = mirror.remote_branch(&branch)?;
    let base_branch = match &spec.base {
        Some(b) => b.clone(),
        None => super::remote::default_branch(&mirror.url)?.ok_or_else(|| {
            WorkspaceError::RemoteUnreachable {
                url: shown_url(url),
                why: "it has no default branch (an empty repository?)".into(),
                fix: "push a first commit there, or give the job --base BRANCH".into(),
            }
        })?,
    };
    let base_sha = match recorded {
        Some(sha) => resolve(&git, sha)?.ok_or_else(|| WorkspaceError::BadBase {
            base: sha.to_owned(),
            repo: mirror.dir.clone(),
        })?,
        None => {
            let tracking = format!("refs/remotes/{}/{base_branch}", super::remote::ORIGIN);
            match resolve(&git, &tracking)? {
                Some(sha) => sha,
                None => resolve(&git, &base_branch)?.ok_or_else(|| WorkspaceError::BadBase {
                    base: base_branch.clone(),
                    repo: mirror.dir.clone(),
                })?,
            }
        }
    };
    let wt = root.join(job_id);
    let start = pushed.clone().unwrap_or_else(|| base_sha.clone());
    let mut attempt = 0;
    let base_commit = loop {
        match check_out(&git, job_id, &branch, &base_sha, &start, &wt) {
            Err(e) if e.is_contention() && attempt + 1 < ATTEMPTS => {
                attempt += 1;
                std::thread::sleep(backoff(attempt));
            }
            result => break result?,
        }
    };
    if let Some(pushed) = &pushed {
        catch_up(&wt, pushed)?;
    }
    let prefix = prefix_of(spec);
    let path = if prefix.as_os_str().is_empty() {
        wt
    } else {
        wt.join(prefix)
    };
    make_dirs(&path, job_id)?;
    Ok(Workspace {
        path,
        branch: Some(branch),
        base_commit: Some(base_commit),
        base_branch: Some(base_branch),
    })
}

/// Brings the worktree's branch to the remote's copy of it when that is newer: a runner on
/// another machine stepped the job since this one last did. Commits of this machine the
/// remote does not have on top of it stay (a harvest whose push failed pushes them next
/// time); commits the remote's copy replaced (a stale runner's, whose push was refused) are
/// dropped from the branch — the mirror's reflog keeps them. Uncommitted changes that would
/// be lost stop it (`reset --keep` refuses).
fn catch_up(wt: &Path, pushed: &str) -> Result<(), WorkspaceError> {
    let git = super::git::Git::new(wt);
    let head = git.run(&["rev-parse", "HEAD"])?;
    if head.trim() == pushed
        || git
            .cmd(&["merge-base", "--is-ancestor", pushed, head.trim()])
            .yes()?
    {
        return Ok(());
    }
    git.cmd(&["reset", "-q", "--keep", pushed])
        .hint("the worktree has uncommitted changes in files the remote's newer copy of the branch changed; commit or discard them, then step the job again")
        .run()?;
    Ok(())
}

/// Pushes the job's branch from its worktree `ws` to the remote, when the worktree is one of a
/// mirror's; nothing otherwise. The push is leased on what this mirror last fetched or pushed
/// of the branch (`--force-with-lease`): a runner whose copy is stale — another runner pushed
/// since — is refused and pushes nothing.
pub fn push_branch(ws: &Workspace) -> Result<(), WorkspaceError> {
    let Some(branch) = &ws.branch else {
        return Ok(());
    };
    let Some(mirror) = Mirror::of(&ws.path)? else {
        return Ok(());
    };
    let expect = mirror.remote_branch(branch)?;
    mirror.push(
        &ws.path,
        &[format!("HEAD:refs/heads/{branch}")],
        &[(branch.clone(), expect)],
    )
}

/// The job's patch, from any machine: the workspace's own diff ([`super::diff`], uncommitted
/// changes included) where its worktree is here — for a job whose source is a remote, under
/// this `state_dir`; else, for a job whose source is a remote, its branch as pushed there,
/// fetched into this machine's mirror (`<state_dir>/mirrors/`), from its base.
pub fn diff_anywhere(
    spec: &JobSpec,
    ws: &Workspace,
    job_id: &str,
    state_dir: &Path,
) -> Result<String, WorkspaceError> {
    let Some(url) = &spec.remote else {
        if ws.path.is_dir() {
            return super::diff(ws);
        }
        return Err(WorkspaceError::Elsewhere {
            path: ws.path.clone(),
        });
    };
    // A remote's job is read from its worktree only when this machine's runner made it (it
    // is under this state directory): a path that merely exists may be another runner's, on
    // a disk both see, and the remote has the work as pushed.
    if ws.path.is_dir() && ws.path.starts_with(state_dir.join("worktrees")) {
        return super::diff(ws);
    }
    let base = super::base_of(ws)?;
    let (mirror, _, tip) = pushed_tip(spec, ws, job_id, url, state_dir)?;
    super::patch(&mirror.git(), &[base, &tip]).map_err(|e| masked(e, url))
}

/// This machine's mirror of `url`, fetched now, with the job's branch and its tip as the
/// remote has it: [`WorkspaceError::NotPushed`] when no runner pushed it yet.
pub(super) fn pushed_tip(
    spec: &JobSpec,
    ws: &Workspace,
    job_id: &str,
    url: &str,
    state_dir: &Path,
) -> Result<(Mirror, String, String), WorkspaceError> {
    let mirror = Mirror::open(&state_dir.join("mirrors"), url)?;
    mirror.fetch()?;
    let branch = ws.branch.clone().unwrap_or_else(|| spec.branch_of(job_id));
    let tip = mirror
        .remote_branch(&branch)?
        .ok_or_else(|| WorkspaceError::NotPushed {
            branch: branch.clone(),
            url: shown_url(url),
        })?;
    Ok((mirror, branch, tip))
}
