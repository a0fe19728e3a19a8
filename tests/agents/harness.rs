//! Finding the pinned CLIs and running them in a sealed sandbox: a private HOME, TMPDIR and
//! config dir, an environment cleared of everything but PATH (so no real user config, proxy or
//! API key leaks in), stdin from /dev/null, and a wall-clock cap so a CLI that never exits fails
//! the test instead of hanging it.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Where the CLI `name` lives inside an install directory made by scripts/install-agents.sh.
fn in_install_dir(dir: &Path, name: &str) -> PathBuf {
    match name {
        "aider" => dir.join("aider/venv/bin/aider"),
        _ => dir.join(name).join("node_modules/.bin").join(name),
    }
}

/// The CLI `name`: `$ONESHOT_TEST_AGENTS/…`, then the repository's default install directory
/// (`.cache/agents`), then PATH. `None` means skip: printed here, and a panic when `CI` is set,
/// because CI installs them and a silent skip there would hide a broken canary.
pub fn find(name: &str) -> Option<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("ONESHOT_TEST_AGENTS") {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/agents"));
    let found = dirs
        .iter()
        .map(|d| in_install_dir(d, name))
        .chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|d| d.join(name)),
        )
        .find(|p| p.is_file());
    if found.is_none() {
        let why = format!(
            "{name} not found in $ONESHOT_TEST_AGENTS, .cache/agents or PATH; \
             run scripts/install-agents.sh"
        );
        assert!(std::env::var_os("CI").is_none(), "CI: {why}");
        eprintln!("skipped: {why}");
    }
    found
}

/// A private world for one CLI run.
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        for d in ["home", "work", "tmp"] {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        Sandbox { tmp }
    }

    pub fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    /// The CLI's working directory (where its tools create files).
    pub fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }

    /// Writes `rel` under HOME, creating parent directories.
    pub fn home_file(&self, rel: &str, content: &str) {
        let p = self.home().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// `bin` with the sealed environment: only PATH survives; HOME, TMPDIR and XDG dirs are ours.
    pub fn command(&self, bin: &Path) -> Command {
        let mut c = Command::new(bin);
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("TMPDIR", self.tmp.path().join("tmp"))
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("XDG_CACHE_HOME", self.home().join(".cache"))
            .env("XDG_DATA_HOME", self.home().join(".local/share"))
            .env("XDG_STATE_HOME", self.home().join(".local/state"))
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .current_dir(self.work())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
}

/// What a finished run left.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    /// The stdout lines that parse as JSON objects (the CLI's event stream).
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
            .filter(Value::is_object)
            .collect()
    }

    /// The events whose `type` is `ty`.
    pub fn of_type(&self, ty: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == ty)
            .collect()
    }

    /// The last event of type `ty`; panics with the whole output when there is none.
    pub fn last(&self, ty: &str) -> Value {
        self.of_type(ty)
            .pop()
            .unwrap_or_else(|| panic!("no {ty} event\n{}", self.dump()))
    }

    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Both streams, for assertion messages.
    pub fn dump(&self) -> String {
        format!(
            "exit: {:?} after {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// Runs `cmd` to completion; panics if it outlives `limit` (after killing it).
pub fn run(cmd: Command, limit: Duration) -> Run {
    try_run(cmd, limit)
        .unwrap_or_else(|r| panic!("agent still running after {limit:?}\n{}", r.dump()))
}

/// Runs `cmd` for at most `limit`: `Err` with what it printed when it had to be killed (for the
/// CLIs that never give up on their own).
pub fn try_run(mut cmd: Command, limit: Duration) -> Result<Run, Run> {
    let start = Instant::now();
    // Its own process group, so the kill below also reaches the tools it spawned.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().expect("spawn the agent CLI");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            timed_out = true;
            kill_group(child.id());
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Tools the CLI left behind must not keep the pipes (and this test) open.
    kill_group(child.id());
    let r = Run {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        elapsed: start.elapsed(),
    };
    if timed_out { Err(r) } else { Ok(r) }
}

fn kill_group(pid: u32) {
    // SAFETY: kill(2) with a negative pid signals a process group we created; no memory involved.
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
}
