//! The terminal reporter in a real terminal (tmux): the status line is drawn where it can be
//! erased and only there, fits the width, goes away at the end, and agent output cannot
//! retitle the window or clear the screen.

use crate::common;
use crate::job_env;

use common::World;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of the test's own, killed when the test ends, passed or failed.
struct Tmux {
    socket: String,
    /// The server's socket file, which `kill-server` leaves behind.
    path: Option<std::path::PathBuf>,
}

impl Tmux {
    /// A detached `width`×24 pane running `sh script`.
    fn start(name: &str, width: u16, script: &Path) -> Tmux {
        let socket = format!("oneshot-test-{name}-{}", std::process::id());
        let mut tmux = Tmux { socket, path: None };
        let status = tmux
            .cmd()
            .args(["-f", "/dev/null", "new-session", "-d", "-x"])
            .arg(width.to_string())
            .args(["-y", "24", "sh"])
            .arg(script)
            .status()
            .unwrap();
        assert!(status.success(), "tmux did not start");
        let out = tmux
            .cmd()
            .args(["display", "-p", "#{socket_path}"])
            .output()
            .unwrap();
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        tmux.path = (!path.is_empty()).then(|| path.into());
        tmux
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    fn capture(&self) -> String {
        let out = self.cmd().args(["capture-pane", "-p"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn title(&self) -> String {
        let out = self
            .cmd()
            .args(["display", "-p", "#{pane_title}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Polls the pane until `done` holds for its content; panics with the pane after 20 s.
    fn wait(&self, what: &str, mut done: impl FnMut(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let pane = self.capture();
            if done(&pane) {
                return pane;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timed out waiting for {what}; the pane:\n{pane}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A shell script that runs oneshot in the pane with `env` and `pipe` (say `| cat`), prints
/// `EXITED n` and keeps the pane open.
fn script(w: &World, worker: &str, env: &str, pipe: &str, before: &str) -> std::path::PathBuf {
    let auditor = w.script("a.sh", "echo 'VERDICT: DONE'");
    // The built-in limits, with a wall-clock timeout for the status line to count down.
    let policy = w.policy("return { limits = { worker_timeout = '10m' } }");
    let body = format!(
        "{env}\nexport ONESHOT_STATE_DIR='{state}'\ncd '{work}'\n{before}\n'{bin}' --worker-cmd \
         '{worker}' --auditor-cmd '{auditor}' --policy '{policy}' 'the task' {pipe}\necho \
         EXITED $?\nsleep 60\n",
        state = w.state_dir().display(),
        work = w.work().display(),
        bin = env!("CARGO_BIN_EXE_oneshot"),
    );
    w.file("pane.sh", &body)
}

fn exited(pane: &str) -> bool {
    pane.contains("EXITED ")
}

fn status_row(pane: &str) -> Option<&str> {
    pane.lines()
        .find(|l| l.starts_with("oneshot ") && l.contains("WORKER_EXECUTING ·"))
}

#[test]
fn the_status_line_shows_the_clocks_and_is_cleared_at_the_end() {
    let w = World::new();
    let worker = w.script("w.sh", "echo started; sleep 3; echo finished");
    let tmux = Tmux::start("status", 200, &script(&w, &worker, "", "", ""));
    let pane = tmux.wait("the status line", |p| {
        status_row(p).is_some_and(|l| l.contains("worker 1s") || l.contains("worker 2s"))
    });
    let row = status_row(&pane).unwrap();
    assert!(row.contains("iteration 1/5"), "{row}");
    assert!(row.contains("last output"), "{row}");
    // The built-in inactivity timeout is 5 minutes: the time left counts down from it.
    assert!(row.contains("silent timeout in 4m5"), "{row}");
    assert!(row.contains("time left 9m5"), "{row}");
    assert!(row.contains("total "), "{row}");
    let pane = tmux.wait("the end", exited);
    assert!(pane.contains("EXITED 0"), "{pane}");
    assert!(
        !pane.contains("last output"),
        "a status line was left behind:\n{pane}"
    );
    assert!(pane.contains("[worker] finished"), "{pane}");
    let last = pane
        .lines()
        .rfind(|l| l.contains("COMPLETED"))
        .unwrap_or_else(|| panic!("{pane}"));
    assert!(last.contains("1 of 5 iterations"), "{last}");
}

#[test]
fn a_narrow_terminal_truncates_the_status_line() {
    let w = World::new();
    let worker = w.script("w.sh", "sleep 3");
    let tmux = Tmux::start("narrow", 40, &script(&w, &worker, "", "", ""));
    let pane = tmux.wait("the status line", |p| status_row(p).is_some());
    let row = status_row(&pane).unwrap();
    assert!(row.ends_with('…'), "{row:?}");
    assert!(row.chars().count() <= 39, "{row:?}");
    // Not wrapped onto a second row either.
    let after = pane.lines().skip_while(|l| *l != row).nth(1).unwrap_or("");
    assert!(!after.contains("iteration"), "{pane}");
    tmux.wait("the end", exited);
}

#[test]
fn no_status_line_when_stdout_is_piped_or_the_terminal_is_dumb() {
    for (name, env, pipe) in [("piped", "", "| cat"), ("dumb", "export TERM=dumb", "")] {
        let w = World::new();
        let worker = w.script("w.sh", "echo one; sleep 2; echo two; sleep 1");
        let tmux = Tmux::start(name, 100, &script(&w, &worker, env, pipe, ""));
        let mut seen = String::new();
        let pane = tmux.wait("the end", |p| {
            seen.push_str(p);
            exited(p)
        });
        assert!(pane.contains("EXITED 0"), "{name}: {pane}");
        assert!(
            !seen.contains("last output") && !seen.contains("· total"),
            "{name}: a status line was drawn:\n{seen}"
        );
        // Nothing glued: every agent line starts a row of its own.
        for l in pane.lines().filter(|l| l.contains("[worker]")) {
            assert!(l.starts_with("[worker] "), "{name}: {l:?}");
        }
        assert!(pane.contains("[worker] two"), "{name}: {pane}");
    }
}

#[test]
fn agent_control_sequences_never_reach_the_terminal() {
    let w = World::new();
    let worker = w.script(
        "w.sh",
        "printf 'before\\n'; printf '\\033]0;pwned\\007title\\n'; printf '\\033[2Jcleared\\n'; \
         printf '\\033[5;1Hmoved\\n'",
    );
    // A control: the same sequence printed straight to the pane does change the title, so a
    // title still "control" at the end means oneshot stopped it.
    let before = "printf '\\033]0;control\\007'; sleep 0.3";
    let pane_script = script(&w, &worker, "", "", before);
    // The auditor quotes one too, in the reason oneshot prints on its own lines.
    w.script(
        "a.sh",
        "printf 'VERDICT: DONE \\033]0;pwned2\\007looks \\033[2Jgood\\n'",
    );
    let tmux = Tmux::start("osc", 100, &pane_script);
    let pane = tmux.wait("the end", exited);
    assert_eq!(tmux.title(), "control", "{pane}");
    assert!(pane.contains("EXITED 0"), "{pane}");
    // The screen was not cleared: oneshot's first line is still on it, above the agent's.
    let first = pane
        .lines()
        .position(|l| l.starts_with("oneshot: session "));
    let cleared = pane.lines().position(|l| l == "[worker] cleared");
    assert!(
        first.is_some() && cleared.is_some() && first < cleared,
        "{pane}"
    );
    assert!(pane.contains("[worker] title"), "{pane}");
    assert!(pane.contains("[worker] moved"), "{pane}");
    assert!(pane.contains("COMPLETED (done: looks good)"), "{pane}");
    // The log keeps what the agent wrote.
    let log =
        std::fs::read_to_string(w.session_dir(&w.session_id()).join("oneshot-log.json")).unwrap();
    assert!(log.contains("pwned"), "the log lost the raw bytes");
}

#[test]
fn a_grace_period_shows_stopping() {
    let w = World::new();
    // Silent past its inactivity timeout, and deaf to SIGTERM: the grace period runs out.
    let worker = w.script("w.sh", "trap '' TERM; sleep 10");
    let auditor = w.script("a.sh", "echo 'VERDICT: DONE'");
    let policy = w.policy(
        "return { limits = { max_iterations = 1, inactivity_timeout = 1, grace_period = '3s' } }",
    );
    let body = format!(
        "export ONESHOT_STATE_DIR='{state}'\ncd '{work}'\n'{bin}' --worker-cmd '{worker}' \
         --auditor-cmd '{auditor}' --policy '{policy}' 'the task'\necho EXITED $?\nsleep 60\n",
        state = w.state_dir().display(),
        work = w.work().display(),
        bin = env!("CARGO_BIN_EXE_oneshot"),
    );
    let tmux = Tmux::start("grace", 120, &w.file("pane.sh", &body));
    let pane = tmux.wait("stopping…", |p| {
        status_row(p).is_some_and(|l| l.contains("stopping…"))
    });
    let row = status_row(&pane).unwrap();
    assert!(!row.contains("silent timeout"), "{row}");
    let pane = tmux.wait("the end", exited);
    assert!(!pane.contains("stopping…"), "{pane}");
    let last = pane.lines().rfind(|l| l.contains("FAILED")).unwrap_or("");
    assert!(
        last.contains("printed nothing for the inactivity timeout"),
        "{pane}"
    );
}

/// Saves like an editor: a temp file renamed over the original.
fn save(path: &Path, content: &str) {
    let tmp = path.with_extension("swp");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn a_reload_problem_shows_on_the_status_line_until_a_fix_loads() {
    let w = World::new();
    let go = w.tmp.path().join("go");
    let worker = w.script(
        "w.sh",
        &format!("while [ ! -f '{}' ]; do sleep 0.05; done", go.display()),
    );
    let tmux = Tmux::start("reload", 250, &script(&w, &worker, "", "", ""));
    tmux.wait("the status line", |p| status_row(p).is_some());
    let policy = w.tmp.path().join("p.lua");
    save(&policy, "return { limits = { max_iteratons = 3 } }\n");
    let pane = tmux.wait("the reload problem", |p| {
        status_row(p).is_some_and(|l| l.contains("policy: policy edit not activated"))
    });
    assert!(pane.contains("max_iteratons"), "{pane}");
    save(&policy, "return { limits = { max_iterations = 3 } }\n");
    let pane = tmux.wait("the fix", |p| {
        status_row(p).is_some_and(|l| l.contains("iteration 1/3"))
    });
    let row = status_row(&pane).unwrap();
    assert!(!row.contains("policy:"), "a stale reload message: {row}");
    std::fs::write(&go, "").unwrap();
    let pane = tmux.wait("the end", exited);
    assert!(pane.contains("EXITED 0"), "{pane}");
}

/// `job run` on a terminal (issue 21): a status line with the steps running, where finished
/// steps left their jobs and the time, between the transition lines, gone at the end.
#[test]
fn job_run_shows_its_steps_on_a_status_line_and_clears_it() {
    let w = World::new();
    let repo = job_env::repo(w.tmp.path());
    let bin = env!("CARGO_BIN_EXE_oneshot");
    let body = format!(
        "export ONESHOT_STATE_DIR='{state}'\ncd '{repo}'\n\
         for t in one two; do '{bin}' job create --worker-cmd \"sh -c 'sleep 3; echo hi > f.txt'\" \
         --auditor-cmd 'echo VERDICT: DONE' --activate \"job $t\" > /dev/null; done\n\
         '{bin}' job run --parallel 2\necho EXITED $?\nsleep 60\n",
        state = w.state_dir().display(),
        repo = repo.display(),
    );
    let pane_sh = w.file("pane.sh", &body);
    let tmux = Tmux::start("jobs", 160, &pane_sh);
    let row = |p: &str| {
        p.lines()
            .find(|l| l.starts_with("oneshot job run · "))
            .map(str::to_string)
    };
    let pane = tmux.wait("the status line", |p| {
        row(p).is_some_and(|r| r.contains("2 running (EXECUTING 2)"))
    });
    let r = row(&pane).unwrap();
    assert!(r.ends_with('s'), "the elapsed time ends it: {r}");
    let pane = tmux.wait("the end", exited);
    assert!(pane.contains("EXITED 0"), "{pane}");
    assert!(
        row(&pane).is_none(),
        "a status line was left behind:\n{pane}"
    );
    assert!(pane.contains("HARVESTING → APPROVAL_REQUIRED"), "{pane}");
}
