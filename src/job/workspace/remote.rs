//! A job whose source is a git remote (`job create --remote URL|PATH`): each machine keeps a
//! **mirror** of the remote under its state directory (`<state dir>/mirrors/<hash>.git`, bare,
//! fetched, never cloned again), provisions the job's worktree from it, and pushes the job's
//! branch back at each harvest — so another runner, `job diff` and `job land` on any machine
//! can fetch the work.
//!
//! The mirror's remote is `origin`; its branches are fetched into `refs/remotes/origin/*`,
//! so the mirror's own `refs/heads/*` are the branches of the jobs it works on. Whatever runs
//! git against the remote holds the mirror's lock file (`<mirror>.oneshot-lock`, `flock`), so
//! the jobs one runner provisions at once never race each other's fetches.

use super::git::Git;
use super::{JobSpec, WorkspaceError, hex_sha256};
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The remote's name in every mirror.
pub(super) const ORIGIN: &str = "origin";

/// The configuration key that marks a repository as oneshot's mirror of a remote: a harvest
/// in a worktree of one pushes the job's branch.
const MARK: &str = "oneshot.mirror";

/// A machine's mirror of one remote.
pub(super) struct Mirror {
    /// The bare repository.
    pub dir: PathBuf,
    /// The remote's URL or path, as the job's spec has it.
    pub url: String,
}

/// `url` as it may be shown: a password (or a token given as the user) in its userinfo
/// replaced, and whatever the redactor takes for a secret masked too.
pub fn shown_url(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest = scheme_end + 3;
        let authority_end = out[rest..].find(['/', '?']).map_or(out.len(), |i| rest + i);
        if let Some(at) = out[rest..authority_end].rfind('@').map(|i| rest + i) {
            match out[rest..at].find(':').map(|i| rest + i) {
                Some(colon) => out.replace_range(colon + 1..at, crate::pipeline::REDACTED),
                // `https://TOKEN@host/…`: a user name that is not a plain short name is taken
                // for a token. `ssh://git@host` keeps its `git`.
                None if !plain_user(&out[rest..at]) => {
                    out.replace_range(rest..at, crate::pipeline::REDACTED)
                }
                None => {}
            }
        }
    }
    crate::job::redactor(None).redact(&out).into_owned()
}

/// Whether a URL's userinfo holds a password (`user:password@`) or a token as its user:
/// a secret the job store must not keep.
pub fn holds_secret(url: &str) -> bool {
    shown_url(url) != url
}

fn plain_user(user: &str) -> bool {
    user.len() <= 32
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The remote's branch `HEAD` points at (`main`), asked of the remote itself; `None` when it
/// has no such branch (an empty repository).
pub fn default_branch(url: &str) -> Result<Option<String>, WorkspaceError> {
    let out = ls_remote(url, &["--symref"], &["HEAD"])?;
    Ok(out.lines().find_map(|l| {
        l.strip_prefix("ref: refs/heads/")
            .and_then(|r| r.split('\t').next())
            .map(str::to_owned)
    }))
}

/// Checks that the remote answers (`git ls-remote`), as `job create` does; and when `branch`
/// is given, that the remote has it.
pub fn check_remote(url: &str, branch: Option<&str>) -> Result<(), WorkspaceError> {
    let out = ls_remote(url, &["--heads"], &[])?;
    if let Some(b) = branch {
        let wanted = format!("refs/heads/{b}");
        if !out
            .lines()
            .any(|l| l.split('\t').nth(1) == Some(wanted.as_str()))
        {
            return Err(WorkspaceError::RemoteUnreachable {
                url: shown_url(url),
                why: format!("it has no branch {b}"),
                fix: "give --base a branch the remote has (`git ls-remote --heads URL` lists them)"
                    .into(),
            });
        }
    }
    Ok(())
}

/// `git ls-remote OPTS… URL PATTERNS…` from a scratch directory, with the user's configuration
/// (credentials, ssh); a failure names the URL masked.
fn ls_remote(url: &str, opts: &[&str], patterns: &[&str]) -> Result<String, WorkspaceError> {
    let git = Git::for_remote(std::env::temp_dir());
    let mut cmd = git.cmd(&["ls-remote"]);
    for a in opts {
        cmd = cmd.arg(a);
    }
    cmd = cmd.arg("--end-of-options").arg(url_arg(url));
    for p in patterns {
        cmd = cmd.arg(p);
    }
    let out = cmd.spawn()?;
    if out.code == Some(0) {
        return Ok(out.stdout);
    }
    Err(WorkspaceError::RemoteUnreachable {
        url: shown_url(url),
        why: mask_in(&out.stderr, url),
        fix: "check the URL (or path), that this machine reaches it (network, ssh keys, a \
              credential helper: `git ls-remote URL` shows what git says), and that every runner \
              can reach it too"
            .into(),
    })
}

/// A path is given to git as it is; a relative one would be read from git's directory.
fn url_arg(url: &str) -> String {
    let p = Path::new(url);
    if !url.contains("://")
        && p.is_relative()
        && p.exists()
        && let Ok(abs) = std::fs::canonicalize(p)
    {
        return abs.display().to_string();
    }
    url.to_owned()
}

/// `text` with every occurrence of `url` shown masked.
fn mask_in(text: &str, url: &str) -> String {
    let shown = shown_url(url);
    let masked = if shown == url {
        text.to_owned()
    } else {
        text.replace(url, &shown)
    };
    crate::job::redactor(None).redact(&masked).into_owned()
}

/// A git error of a command that talked to `url`, with the URL masked wherever it appears.
pub(super) fn masked(e: WorkspaceError, url: &str) -> WorkspaceError {
    match e {
        WorkspaceError::Git {
            args,
            dir,
            status,
            stderr,
            hint,
        } => WorkspaceError::Git {
            args: mask_in(&args, url),
            dir,
            status,
            stderr: mask_in(&stderr, url),
            hint,
        },
        e => e,
    }
}

impl Mirror {
    /// This machine's mirror of `url` under `mirrors` (made, empty, when there is none yet).
    pub fn open(mirrors: &Path, url: &str) -> Result<Mirror, WorkspaceError> {
        std::fs::create_dir_all(mirrors).map_err(|e| WorkspaceError::io("creating", mirrors, e))?;
        let name = &hex_sha256(url)[..16];
        let dir = mirrors.join(format!("{name}.git"));
        let mirror = Mirror {
            dir,
            url: url_arg(url),
        };
        if !mirror.dir.join("HEAD").exists() {
            let _lock = mirror.lock()?;
            if !mirror.dir.join("HEAD").exists() {
                mirror.make()?;
            }
        }
        Ok(mirror)
    }

    /// The mirror whose worktree (or the mirror itself) `dir` is, if it is one.
    pub fn of(dir: &Path) -> Result<Option<Mirror>, WorkspaceError> {
        let git = Git::new(dir);
        let mark = git.cmd(&["config", "--get", MARK]).spawn()?;
        if mark.code != Some(0) || mark.stdout.trim() != "true" {
            return Ok(None);
        }
        let common = git.run(&["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
        let url = git.run(&["config", "--get", &format!("remote.{ORIGIN}.url")])?;
        Ok(Some(Mirror {
            dir: PathBuf::from(common.trim()),
            url: url.trim().to_owned(),
        }))
    }

    /// Git in the mirror.
    pub fn git(&self) -> Git {
        Git::new(&self.dir)
    }

    /// Makes the bare repository in a scratch directory beside it, renamed into place whole,
    /// so a crash never leaves half a mirror.
    fn make(&self) -> Result<(), WorkspaceError> {
        let scratch = PathBuf::from(format!("{}.new-{}", self.dir.display(), std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        Git::new(self.dir.parent().unwrap_or(Path::new("/")))
            .cmd(&["init", "-q", "--bare"])
            .arg(&scratch)
            .run()?;
        let git = Git::new(&scratch);
        let fetch = format!("+refs/heads/*:refs/remotes/{ORIGIN}/*");
        git.cmd(&["config", &format!("remote.{ORIGIN}.url")])
            .arg(&self.url)
            .run()?;
        git.run(&["config", &format!("remote.{ORIGIN}.fetch"), &fetch])?;
        git.run(&["config", MARK, "true"])?;
        // A bare repository keeps no reflogs by default; a job branch moved by a recovery is
        // then still found in its reflog.
        git.run(&["config", "core.logAllRefUpdates", "always"])?;
        std::fs::rename(&scratch, &self.dir)
            .map_err(|e| WorkspaceError::io("renaming", &scratch, e))
    }

    /// Holds the mirror's lock until the returned guard is dropped: one git conversation with
    /// the remote (or one mirror being made) at a time on this machine.
    pub fn lock(&self) -> Result<Flock<File>, WorkspaceError> {
        let path = PathBuf::from(format!("{}.oneshot-lock", self.dir.display()));
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| WorkspaceError::io("opening", &path, e))?;
        Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| WorkspaceError::io("locking", &path, errno.into()))
    }

    /// Fetches every branch of the remote into `refs/remotes/origin/*`.
    pub fn fetch(&self) -> Result<(), WorkspaceError> {
        let _lock = self.lock()?;
        Git::for_remote(&self.dir)
            .cmd(&["fetch", "--quiet", "--prune", "--no-tags", ORIGIN])
            .hint("check that this machine reaches the job's remote (`git ls-remote URL`)")
            .run()
            .map(|_| ())
            .map_err(|e| masked(e, &self.url))
    }

    /// The commit the remote's `branch` was at when last fetched (or pushed), if it has it.
    pub fn remote_branch(&self, branch: &str) -> Result<Option<String>, WorkspaceError> {
        super::provision::resolve(&self.git(), &format!("refs/remotes/{ORIGIN}/{branch}"))
    }

    /// Pushes `refspecs` from `dir` (the mirror or a worktree of it) to the remote, each
    /// job branch leased on what this mirror last saw of it (`leases`: branch → the commit
    /// expected there, `None` for absent). `--atomic`: all or nothing.
    pub fn push(
        &self,
        dir: &Path,
        refspecs: &[String],
        leases: &[(String, Option<String>)],
    ) -> Result<(), WorkspaceError> {
        let _lock = self.lock()?;
        let git = Git::for_remote(dir);
        let mut cmd = git.cmd(&["push", "--quiet", "--porcelain", "--atomic"]);
        for (branch, expect) in leases {
            cmd = cmd.arg(format!(
                "--force-with-lease=refs/heads/{branch}:{}",
                expect.as_deref().unwrap_or("")
            ));
        }
        cmd = cmd.arg(ORIGIN);
        for r in refspecs {
            cmd = cmd.arg(r);
        }
        let out = cmd.spawn()?;
        if out.code == Some(0) {
            return Ok(());
        }
        let said = format!("{}\n{}", out.stdout, out.stderr);
        let rejected: Vec<String> = said
            .lines()
            .filter(|l| l.starts_with('!'))
            .map(|l| l.trim_start_matches('!').trim().replace('\t', " "))
            .collect();
        if rejected.is_empty() {
            return Err(masked(cmd.failed(&out), &self.url));
        }
        Err(WorkspaceError::PushRefused {
            url: shown_url(&self.url),
            refused: mask_in(&rejected.join("; "), &self.url),
        })
    }
}

/// The directory inside the repository a remote-sourced job works in: its spec's `source`,
/// relative to the repository's top (`.`, or empty, for the top).
pub(super) fn prefix_of(spec: &JobSpec) -> PathBuf {
    spec.source
        .components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect()
}
