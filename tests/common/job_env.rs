//! The job CLI tests' environment: a git repository with one commit and a state directory,
//! and the `oneshot job` calls the tests make.

// Each test crate that includes this uses part of it.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs git in `dir` (with an identity, unsigned commits) and insists it succeeds; its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `root/repo`: a git repository on branch main with one commit (`a.txt`).
pub fn repo(root: &Path) -> PathBuf {
    let r = root.join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    std::fs::write(r.join("a.txt"), "a\n").unwrap();
    git(&r, &["add", "-A"]);
    git(&r, &["commit", "-qm", "a"]);
    r
}

/// A repository with one commit in a temporary directory, and a state directory in another
/// (the agents are confined away from it, and a directory holding it takes no new entries from
/// an agent: docs/reliability.md, "Agents are confined").
pub struct Env {
    pub dir: tempfile::TempDir,
    pub private: tempfile::TempDir,
}

pub const GOOD_WORKER: &str = "sh -c 'echo hi > f.txt'";
pub const DONE: &str = "echo VERDICT: DONE";

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        repo(dir.path());
        Env {
            dir,
            private: tempfile::tempdir().unwrap(),
        }
    }

    /// The state directory.
    pub fn state_dir(&self) -> PathBuf {
        self.private.path().join("state")
    }

    pub fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    pub fn oneshot(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// The command `oneshot` runs, in the repository, to add to (another directory, more
    /// environment). The user's own config files and ONESHOT_* settings are kept out.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_oneshot"));
        c.arg("--state-dir")
            .arg(self.state_dir())
            .args(args)
            .current_dir(self.repo())
            .env("ONESHOT_ACTOR", "tester")
            .env("NO_COLOR", "1")
            .env("XDG_CONFIG_HOME", self.config_home());
        for k in [
            "ONESHOT_WORKER",
            "ONESHOT_AUDITOR",
            "ONESHOT_WORKER_CMD",
            "ONESHOT_AUDITOR_CMD",
            "ONESHOT_POLICY",
            "ONESHOT_NAMER",
            "ONESHOT_STORE",
        ] {
            c.env_remove(k);
        }
        c
    }

    /// The `XDG_CONFIG_HOME` the commands see (`oneshot/config.toml` below it is the user's
    /// config file); it need not exist.
    pub fn config_home(&self) -> PathBuf {
        self.private.path().join("config")
    }

    /// Runs and insists on exit 0; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.oneshot(args);
        assert!(
            out.status.success(),
            "{args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Steps job `id` into INTERVENTION_REQUIRED: insists on `job step`'s exit 1 (a step
    /// that leaves its job needing a human fails the command) and on the state; returns stdout.
    pub fn stuck(&self, id: &str) -> String {
        let out = self.oneshot(&["job", "step", id]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "job step {id}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(self.state(id), "INTERVENTION_REQUIRED");
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn create(&self, worker: &str, auditor: &str, extra: &[&str]) -> String {
        let mut args = vec![
            "job",
            "create",
            "--worker-cmd",
            worker,
            "--auditor-cmd",
            auditor,
        ];
        args.extend_from_slice(extra);
        args.push("write hi to f.txt");
        let id = self.ok(&args).trim().to_string();
        assert!(id.starts_with("job-") && id.len() == 12, "{id}");
        id
    }

    pub fn show(&self, id: &str) -> Value {
        serde_json::from_str(&self.ok(&["job", "show", id, "--json"])).unwrap()
    }

    /// The job's branch, as `job create` named it.
    pub fn branch(&self, id: &str) -> String {
        let v = self.show(id);
        let b = v["job"]["spec"]["branch"].as_str();
        b.unwrap_or_else(|| panic!("{id} has no branch: {v}"))
            .to_string()
    }

    pub fn state(&self, id: &str) -> String {
        self.show(id)["job"]["state"].as_str().unwrap().to_string()
    }

    /// A new job resting in `state`, reached through the CLI.
    pub fn job_in(&self, state: &str) -> String {
        let (worker, auditor) = match state {
            "INTERVENTION_REQUIRED" => (GOOD_WORKER, "echo VERDICT: IMPOSSIBLE"),
            _ => (GOOD_WORKER, DONE),
        };
        let id = self.create(worker, auditor, &[]);
        let verbs: &[&[&str]] = match state {
            "DRAFT" => &[],
            "PENDING" => &[&["activate"]],
            "SUSPENDED" => &[&["suspend"]],
            "CANCELED" => &[&["cancel"]],
            "APPROVAL_REQUIRED" | "INTERVENTION_REQUIRED" => &[&["activate"], &["step"]],
            "SUCCESS" => &[&["activate"], &["step"], &["approve"]],
            _ => unreachable!("{state}"),
        };
        for v in verbs {
            if state == "INTERVENTION_REQUIRED" && v == &["step"] {
                self.stuck(&id);
                continue;
            }
            let mut args = vec!["job"];
            args.extend_from_slice(v);
            args.push(&id);
            self.ok(&args);
        }
        assert_eq!(self.state(&id), state);
        id
    }
}

/// `value` as a store write takes it: through the redactor a job of the built-in policy has.
#[allow(dead_code)] // Not every test file that includes this module writes to a store.
pub fn sealed<T: serde::Serialize + serde::de::DeserializeOwned>(
    value: &T,
) -> oneshot::redact::Redacted<T> {
    oneshot::job::redactor(None).seal(value).unwrap()
}
