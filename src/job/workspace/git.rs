//! A small runner of the real `git`: one command at a time, in one directory, insulated from
//! the user's configuration and hooks so a job's workspace behaves the same on every machine.

use super::WorkspaceError;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The identity every commit oneshot makes is committed with (and authored with, unless the
/// job names its author): fixed, so a harvest does not depend on the runner's configuration and
/// a missing `user.email` cannot fail it.
pub(super) const NAME: &str = "oneshot";
/// See [`NAME`].
pub(super) const EMAIL: &str = "oneshot@localhost";

/// The default advice when a command fails for a reason oneshot cannot name.
const HINT: &str = "run the same command there to see what is wrong with the repository";

/// Git, run in one directory.
pub(super) struct Git {
    dir: PathBuf,
    env: Vec<(OsString, OsString)>,
    /// Arguments put before every command's own (`-c key=value`).
    prefix: Vec<OsString>,
    /// Read the user's global and system configuration (credentials, `url.*.insteadOf`, an
    /// ssh command): for talking to a remote, which only the user's setup can reach.
    user_config: bool,
}

/// How a command ended, when failing is an answer rather than an error.
pub(super) struct Output {
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Standard output, lossily decoded: git's porcelain output is text.
    pub stdout: String,
    /// Standard error, trimmed.
    pub stderr: String,
}

impl Git {
    /// Git running in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Git {
        Git {
            dir: dir.into(),
            env: Vec::new(),
            prefix: Vec::new(),
            user_config: false,
        }
    }

    /// Git in `dir` that reads the user's global and system configuration, for `fetch` and
    /// `push`: a remote is reached the way the user reaches it.
    pub fn for_remote(dir: impl Into<PathBuf>) -> Git {
        Git {
            user_config: true,
            ..Git::new(dir)
        }
    }

    /// Sets an environment variable for every command (a private `GIT_INDEX_FILE`).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Git {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Puts `args` before every command's own (a `-c key=value` of the user's).
    pub fn prefix(mut self, args: impl IntoIterator<Item = String>) -> Git {
        self.prefix.extend(args.into_iter().map(OsString::from));
        self
    }

    /// A command with these leading arguments; add paths with [`Cmd::arg`].
    pub fn cmd(&self, args: &[&str]) -> Cmd<'_> {
        Cmd {
            git: self,
            args: self
                .prefix
                .iter()
                .cloned()
                .chain(args.iter().map(OsString::from))
                .collect(),
            hint: HINT,
        }
    }

    /// Runs `args` and returns stdout; a non-zero exit is an error.
    pub fn run(&self, args: &[&str]) -> Result<String, WorkspaceError> {
        self.cmd(args).run()
    }
}

/// One git command being put together.
pub(super) struct Cmd<'a> {
    git: &'a Git,
    args: Vec<OsString>,
    hint: &'static str,
}

impl Cmd<'_> {
    /// One more argument (a path, a revision).
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// What to tell the user if this command fails.
    pub fn hint(mut self, hint: &'static str) -> Self {
        self.hint = hint;
        self
    }

    /// Runs it and returns stdout; a non-zero exit is an error naming the command.
    pub fn run(self) -> Result<String, WorkspaceError> {
        let out = self.output()?;
        Ok(out.stdout)
    }

    /// Runs it and returns how it ended, failing only when a non-zero exit is not `0` or `1`:
    /// the yes/no commands (`merge-base --is-ancestor`, `diff --quiet`) answer with 0 and 1.
    pub fn yes(self) -> Result<bool, WorkspaceError> {
        let out = self.spawn()?;
        match out.code {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(self.failed(&out)),
        }
    }

    /// Runs it; a non-zero exit is an error.
    pub fn output(self) -> Result<Output, WorkspaceError> {
        let out = self.spawn()?;
        if out.code == Some(0) {
            Ok(out)
        } else {
            Err(self.failed(&out))
        }
    }

    /// Runs it and returns how it ended, whatever that was.
    pub fn spawn(&self) -> Result<Output, WorkspaceError> {
        let mut cmd = Command::new("git");
        // Hooks and signing are the user's business, not a job's: a pre-commit hook or a
        // gpg prompt must not decide whether a harvest works.
        cmd.args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(["-c", "tag.gpgsign=false", "-c", "core.quotepath=false"])
        .args(&self.args)
        .current_dir(&self.git.dir)
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .env("GIT_AUTHOR_NAME", NAME)
        .env("GIT_AUTHOR_EMAIL", EMAIL)
        .env("GIT_COMMITTER_NAME", NAME)
        .env("GIT_COMMITTER_EMAIL", EMAIL);
        if !self.git.user_config {
            cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1");
        }
        // Inherited from a caller that itself runs under git (a hook, a test harness), these
        // would point every command at the wrong repository.
        for var in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_OBJECT_DIRECTORY",
            "GIT_COMMON_DIR",
            "GIT_PREFIX",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in &self.git.env {
            cmd.env(k, v);
        }
        let out = cmd.output().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound && !self.git.dir.is_dir() {
                WorkspaceError::io("running git in", &self.git.dir, e)
            } else if e.kind() == std::io::ErrorKind::NotFound {
                WorkspaceError::GitMissing { source: e }
            } else {
                WorkspaceError::io("running git in", &self.git.dir, e)
            }
        })?;
        Ok(Output {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }

    /// The error for this command having ended as `out`.
    pub fn failed(&self, out: &Output) -> WorkspaceError {
        let args: Vec<String> = self
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        WorkspaceError::Git {
            args: args.join(" "),
            dir: self.git.dir.clone(),
            status: match out.code {
                Some(c) => format!("exit status {c}"),
                None => "killed by a signal".to_owned(),
            },
            stderr: if out.stderr.is_empty() {
                "(no message)".to_owned()
            } else {
                out.stderr.clone()
            },
            hint: self.hint,
        }
    }
}
