//! A fleet for tests (issue 23): one PostgreSQL job store (a database of the test cluster,
//! `pg_server.rs`), one bare repository every job's source is (`--remote`), and "machines" —
//! each its own HOME, state, cache and working directory, sharing nothing but the store, the
//! remote and a directory where the workers record their side effects — whose runners are real
//! `oneshot job run --wait` processes.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

// The binary's own modules (tests/common/job_env.rs, pg_server.rs): one cluster per process,
// whichever module reaches it.
use crate::job_env;
pub(crate) use crate::pg_server;
pub use job_env::{git, repo};

/// The store, the remote, the record of side effects.
pub struct Fleet {
    pub dir: tempfile::TempDir,
    /// The store's URL.
    pub url: String,
    /// The command line of this fleet's held workers' wait (`sleep N`, N this fleet's own: the
    /// tests of one process run at once, each with a fleet).
    pub marker: String,
}

/// One machine.
pub struct Machine {
    pub name: String,
    pub root: PathBuf,
    /// The job store: a PostgreSQL URL, or a SQLite file's path.
    store: String,
}

/// A runner process of a machine: killed if the test ends with it still running.
pub struct Runner {
    pub child: Child,
    pub log: PathBuf,
}

impl Drop for Runner {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Runner {
    /// What the runner printed so far (stdout and stderr).
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops it as a Ctrl-C does and waits for its exit.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the runner did not stop: {}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Fleet {
    /// A fleet on a fresh, migrated database; `None` where PostgreSQL is not installed (and this
    /// is not CI: see `pg_server`).
    pub fn new() -> Option<Fleet> {
        Some(Fleet::on(pg_server::fresh_database()?))
    }

    /// A fleet on the fresh database `url` (of a cluster of the test's own, say), migrated.
    pub fn on(url: String) -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let src = repo(dir.path());
        git(
            dir.path(),
            &[
                "clone",
                "-q",
                "--bare",
                &src.display().to_string(),
                "remote.git",
            ],
        );
        std::fs::create_dir_all(dir.path().join("effects")).unwrap();
        static FLEETS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = FLEETS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let marker = format!("sleep 7{:07}{n:02}", std::process::id());
        let fleet = Fleet { dir, url, marker };
        fleet.machine("admin").ok(&["store", "migrate"]);
        fleet
    }

    /// The remote every job's source is.
    pub fn remote(&self) -> String {
        self.dir.path().join("remote.git").display().to_string()
    }

    /// Where the workers record their side effects: one file per job token, a line per run.
    pub fn effects(&self) -> PathBuf {
        self.dir.path().join("effects")
    }

    /// A new machine.
    pub fn machine(&self, name: &str) -> Machine {
        Machine::at(name, self.dir.path().join("machines").join(name), &self.url)
    }

    /// A worker that records its run (`<session id>` as a line of `effects/<token>.log`),
    /// writes `attempt-<session id>.txt` in the workspace, and — while `effects/hold` exists —
    /// waits there, as [`Fleet::marker`] (which a test looks for among the processes).
    pub fn worker(&self, token: &str) -> String {
        let fx = self.effects();
        format!(
            "sh -c 'echo $ONESHOT_SESSION_ID >> {fx}/{token}.log; echo {token} > attempt-$ONESHOT_SESSION_ID.txt; \
             while [ -e {fx}/hold ]; do {marker} & wait $!; done; true'",
            fx = fx.display(),
            marker = self.marker
        )
    }

    /// The runs the worker of job token `token` recorded, in order.
    pub fn runs(&self, token: &str) -> Vec<String> {
        std::fs::read_to_string(self.effects().join(format!("{token}.log")))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Makes workers wait (`effects/hold`) until [`Fleet::release`].
    pub fn hold(&self) {
        std::fs::write(self.effects().join("hold"), "").unwrap();
    }

    /// Lets held workers go on.
    pub fn release(&self) {
        let _ = std::fs::remove_file(self.effects().join("hold"));
        // A waiting worker is inside its sleep: end those sleeps.
        let _ = Command::new("pkill")
            .args(["-f", &format!("^{}$", self.marker)])
            .status();
    }

    /// The remote's branches under `oneshot/`.
    pub fn pushed(&self) -> Vec<String> {
        let out = Command::new("git")
            .args([
                "for-each-ref",
                "--format=%(refname:short)",
                "refs/heads/oneshot/",
            ])
            .current_dir(self.dir.path().join("remote.git"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The files of the remote's `branch`.
    pub fn files_on(&self, branch: &str) -> Vec<String> {
        let out = Command::new("git")
            .args(["ls-tree", "-r", "--name-only", branch])
            .current_dir(self.dir.path().join("remote.git"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Fleet {
    /// Whether a held worker's wait ([`Fleet::marker`]) is alive.
    pub fn waiting(&self) -> bool {
        alive(&self.marker)
    }
}

/// Whether a process whose command line is `marker` is alive (zombies do not count).
pub fn alive(marker: &str) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|p| {
        let cmd = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let zombie = std::fs::read_to_string(p.path().join("stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        cmd.trim_end() == marker && !zombie
    })
}

/// Polls `f` until it holds, failing with `what` (and `context()`) after `timeout`.
pub fn wait_until(
    timeout: Duration,
    what: &str,
    context: impl Fn() -> String,
    mut f: impl FnMut() -> bool,
) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < timeout,
            "{what} within {timeout:?}\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Machine {
    /// A machine whose directories are below `root`, its job store `store` (a URL or a
    /// SQLite file's path).
    pub fn at(name: &str, root: PathBuf, store: &str) -> Machine {
        for d in ["home", "cwd", "cache", "state"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        Machine {
            name: name.to_string(),
            root,
            store: store.to_string(),
        }
    }

    /// `oneshot ARGS` on this machine: its own HOME, state and cache directories, the fleet's
    /// store.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_oneshot"));
        c.arg("--state-dir")
            .arg(self.state_dir())
            .args(args)
            .current_dir(self.root.join("cwd"))
            .env("HOME", self.root.join("home"))
            .env("XDG_CONFIG_HOME", self.root.join("home/.config"))
            .env("XDG_STATE_HOME", self.root.join("home/.state"))
            .env("XDG_CACHE_HOME", self.root.join("cache"))
            .env("ONESHOT_ACTOR", "tester")
            .env("NO_COLOR", "1")
            .env("ONESHOT_STORE", &self.store);
        for k in [
            "ONESHOT_WORKER",
            "ONESHOT_AUDITOR",
            "ONESHOT_WORKER_CMD",
            "ONESHOT_AUDITOR_CMD",
            "ONESHOT_POLICY",
            "ONESHOT_NAMER",
            "ONESHOT_CLOCK_OFFSET",
        ] {
            c.env_remove(k);
        }
        c
    }

    /// This machine's state directory.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join("state")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs and insists on exit 0; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{} {args:?} failed: {}{}",
            self.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// A runner process: `job run --wait --lease LEASE` and `extra`, its output in a file;
    /// `env` added to its environment.
    pub fn runner(&self, lease: &str, extra: &[&str], env: &[(&str, &str)]) -> Runner {
        let n = std::fs::read_dir(&self.root)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("runner-"))
            .count();
        let log = self.root.join(format!("runner-{n}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let mut args = vec!["job", "run", "--wait", "--lease", lease];
        args.extend_from_slice(extra);
        let mut c = self.command(&args);
        for (k, v) in env {
            c.env(k, v);
        }
        let child = c
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        Runner { child, log }
    }

    /// A PENDING job on the fleet's remote whose worker records its runs under `token`
    /// ([`Fleet::worker`]) and whose auditor says done.
    pub fn create(&self, fleet: &Fleet, token: &str) -> String {
        let id = self
            .ok(&[
                "job",
                "create",
                "--remote",
                &fleet.remote(),
                "--worker-cmd",
                &fleet.worker(token),
                "--auditor-cmd",
                "echo VERDICT: DONE",
                "--activate",
                &format!("job {token}: record the run"),
            ])
            .trim()
            .to_string();
        assert!(id.starts_with("job-"), "{id}");
        id
    }

    /// `job show ID --json`.
    pub fn show(&self, id: &str) -> Value {
        serde_json::from_str(&self.ok(&["job", "show", id, "--json"])).unwrap()
    }

    /// The job's state.
    pub fn state(&self, id: &str) -> String {
        self.show(id)["job"]["state"].as_str().unwrap().to_string()
    }

    /// Every job's id and state (`job list --json`).
    pub fn states(&self) -> Vec<(String, String)> {
        let out = self.ok(&["job", "list", "--json"]);
        out.lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["job_id"].as_str().unwrap().to_string(),
                    v["state"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

/// Where a file of `dir` is, relative to it, for every file below it whose name holds `needle`.
pub fn files_named(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(needle))
            {
                found.push(p);
            }
        }
    }
    found
}
