//! Shared helpers for the integration tests: a scratch directory with a workdir and a state
//! dir, scripts written into it, and the real `oneshot` binary run against them.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A scratch world for one test.
pub struct World {
    /// The workdir, policies, scripts and whatever the agents write outside the workdir.
    pub tmp: tempfile::TempDir,
    /// oneshot's own files (state dir, user config), apart: the agents are confined away from
    /// them, and a directory holding one takes no new entries from an agent (docs/reliability.md, "Agents
    /// are confined").
    pub private: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("work")).unwrap();
        World {
            tmp,
            private: tempfile::tempdir().unwrap(),
        }
    }

    pub fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }

    pub fn state_dir(&self) -> PathBuf {
        self.private.path().join("state")
    }

    /// Writes `name` (outside the workdir, so it never counts as the worker's change).
    pub fn file(&self, name: &str, content: &str) -> PathBuf {
        let p = self.tmp.path().join(name);
        std::fs::write(&p, content).unwrap();
        p
    }

    /// Writes a policy file `p.lua` (outside the workdir) and returns its path for `--policy`.
    pub fn policy(&self, lua: &str) -> String {
        self.file("p.lua", lua).display().to_string()
    }

    /// A `sh SCRIPT` command line for a script with this body.
    pub fn script(&self, name: &str, body: &str) -> String {
        let p = self.file(name, body);
        format!("sh {}", p.display())
    }

    /// The binary with the state dir and workdir set and no inherited ONESHOT_* settings.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_oneshot"));
        for (k, _) in std::env::vars() {
            if k.starts_with("ONESHOT_") {
                c.env_remove(k);
            }
        }
        // A developer's own ~/.config/oneshot/config.toml must not reach the tests.
        c.env("ONESHOT_STATE_DIR", self.state_dir())
            .env("XDG_CONFIG_HOME", self.private.path().join("xdg-config"))
            .current_dir(self.work())
            .stdin(Stdio::null());
        c
    }

    /// Runs a session with these scripts and extra args; returns the finished output.
    pub fn run(&self, worker: &str, auditor: &str, extra: &[&str], task: &str) -> Output {
        self.cmd()
            .args(["--worker-cmd", worker, "--auditor-cmd", auditor])
            .args(extra)
            .arg(task)
            .output()
            .unwrap()
    }

    /// Starts a session in the background.
    pub fn spawn(&self, worker: &str, auditor: &str, extra: &[&str], task: &str) -> Child {
        self.cmd()
            .args(["--worker-cmd", worker, "--auditor-cmd", auditor])
            .args(extra)
            .arg(task)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The ids of all sessions.
    pub fn session_ids(&self) -> Vec<String> {
        let dir = self.state_dir().join("sessions");
        let mut ids: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        ids.sort();
        ids
    }

    /// The only session's id.
    pub fn session_id(&self) -> String {
        let ids = self.session_ids();
        assert_eq!(ids.len(), 1, "expected one session, found {ids:?}");
        ids[0].clone()
    }

    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.state_dir().join("sessions").join(id)
    }

    /// The parsed state file.
    pub fn state(&self, id: &str) -> Value {
        let text = std::fs::read_to_string(self.session_dir(id).join("oneshot.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// The states of the history, in order.
    pub fn trace(&self, id: &str) -> Vec<String> {
        self.state(id)["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["state"].as_str().unwrap().to_string())
            .collect()
    }

    /// The state file, typed.
    pub fn session(&self, id: &str) -> oneshot::session::Session {
        let text = std::fs::read_to_string(self.session_dir(id).join("oneshot.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// The `ctx.reason` word of the last history entry that entered `state`.
    pub fn reason_code(&self, id: &str, state: &str) -> String {
        let s = self.session(id);
        let entry = s
            .history
            .iter()
            .rev()
            .find(|h| h.state.as_str() == state)
            .unwrap_or_else(|| panic!("no {state} in the history"));
        entry
            .reason
            .as_ref()
            .map(|r| r.code().to_string())
            .unwrap_or_default()
    }

    /// The reason of the last history entry that entered `state`, as a person reads it.
    pub fn reason_text(&self, id: &str, state: &str) -> String {
        let s = self.session(id);
        let entry = s
            .history
            .iter()
            .rev()
            .find(|h| h.state.as_str() == state)
            .unwrap_or_else(|| panic!("no {state} in the history"));
        entry
            .reason
            .as_ref()
            .map(|r| r.to_string())
            .unwrap_or_default()
    }

    /// The evidence records of the log, in order.
    pub fn evidence(&self, id: &str) -> Vec<oneshot::session::Evidence> {
        let log = oneshot::store::Log::read(self.session_dir(id).join("oneshot-log.json")).unwrap();
        log.records
            .into_iter()
            .filter_map(|r| match r {
                oneshot::store::Record::Evidence(e) => Some(e.evidence),
                _ => None,
            })
            .collect()
    }

    /// The last history entry of the state file.
    pub fn last_history(&self, id: &str) -> Value {
        self.state(id)["history"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone()
    }

    /// Every record of the activity log (all lines must parse).
    pub fn log(&self, id: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.session_dir(id).join("oneshot-log.json")).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad log line {l:?}: {e}")))
            .collect()
    }

    /// Waits until `path` exists (a script's "I am running" marker).
    /// A worker that, the first time it runs, touches the returned marker and then works for
    /// a long while (to be interrupted or killed), and exits 0 on every later run (a resume).
    pub fn pausing_worker(&self) -> (String, PathBuf) {
        let marker = self.tmp.path().join("started");
        let worker = self.script(
            "w.sh",
            &format!(
                "if [ -f {m} ]; then exit 0; fi; touch {m}; sleep 60",
                m = marker.display()
            ),
        );
        (worker, marker)
    }

    pub fn wait_for(&self, path: &Path, timeout: Duration) {
        let start = Instant::now();
        while !path.exists() {
            assert!(
                start.elapsed() < timeout,
                "timed out waiting for {}",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The exit code, or a panic with the output when it has none.
pub fn code(out: &Output) -> i32 {
    out.status
        .code()
        .unwrap_or_else(|| panic!("no exit code: {}", text(out)))
}

/// stdout and stderr together, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Whether any live (non-zombie) process of group `pgid` exists. In containers whose pid 1
/// never reaps orphans, dead members linger as zombies; they do not count.
pub fn group_alive(pgid: i32) -> bool {
    oneshot::executor::group_alive(pgid)
}

/// Whether process `pid` is alive (and not a zombie we could not reap).
pub fn pid_alive(pid: i32) -> bool {
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => cfg!(not(target_os = "linux")),
    }
}

/// Sends `sig` to `pid`.
pub fn signal(pid: u32, sig: i32) {
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

pub const SIGINT: i32 = libc::SIGINT;
pub const SIGKILL: i32 = libc::SIGKILL;

/// Waits for a child with a deadline, killing it (and failing) past it.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            panic!("process did not exit within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `f` until it is true or the timeout passes.
pub fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    f()
}

/// An auditor that always answers `verdict`.
pub const AUDIT_DONE: &str = "echo 'looks good'; echo 'VERDICT: DONE all checks pass'";

/// Polls the way the engine does (often, never blocking) until something is reported.
pub fn poll_for(
    slot: &mut oneshot::policy::ReloadingPolicy,
    within: std::time::Duration,
) -> Vec<oneshot::policy::ReloadEvent> {
    let deadline = std::time::Instant::now() + within;
    loop {
        let events = slot.poll();
        if !events.is_empty() || std::time::Instant::now() >= deadline {
            return events;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
