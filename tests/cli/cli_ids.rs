//! Ids the user does not type: `log` and `resume` without one take the latest session (as
//! `status` does), and shell completion offers the session and job ids from the stores —
//! through the real binary and, for bash, the real completion script.

use crate::common;
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::job_env;

/// A COMPLETED session with this task; its id.
fn completed(w: &World, task: &str) -> String {
    let before = w.session_ids();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = w.run("true", &auditor, &["-q"], task);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let new: Vec<String> = w
        .session_ids()
        .into_iter()
        .filter(|id| !before.contains(id))
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    new[0].clone()
}

#[test]
fn log_and_resume_without_an_id_take_the_latest_session() {
    let w = World::new();
    for (args, doing) in [
        (&["log"][..], "show the latest session's log"),
        (&["resume"][..], "resume the latest session"),
    ] {
        let out = w.cmd().args(args).output().unwrap();
        assert_eq!(code(&out), 2, "{}", text(&out));
        assert!(
            text(&out).contains(&format!(
                "oneshot: error: failed to {doing}: there are none under"
            )),
            "{}",
            text(&out)
        );
    }

    let first = completed(&w, "the first task");
    // The latest: paused by Ctrl-C in its worker.
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "the second task");
    w.wait_for(&marker, Duration::from_secs(10));
    signal(child.id(), SIGINT);
    wait_timeout(&mut child, Duration::from_secs(15));
    let latest = w.session_ids().into_iter().find(|id| *id != first).unwrap();
    assert_eq!(w.trace(&latest).last().unwrap(), "INTERRUPTED");

    let log = |id: Option<&str>| {
        let out = w.cmd().arg("log").args(id).arg("--json").output().unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out));
        out.stdout
    };
    assert_eq!(log(None), log(Some(&latest)));
    assert_ne!(log(None), log(Some(&first)));

    let out = w.cmd().arg("resume").output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(text(&out).contains(&latest), "{}", text(&out));
    assert_eq!(w.trace(&latest).last().unwrap(), "COMPLETED");
    // The latest is now finished: a resume without an id is refused for it, by its id.
    let out = w.cmd().arg("resume").output().unwrap();
    assert_eq!(code(&out), 4, "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "failed to resume session {latest}: it is COMPLETED"
        )),
        "{}",
        text(&out)
    );
}

/// What bash offers for `line` (its last word being completed) with oneshot's completion
/// script loaded, as a TAB would: the script from `oneshot completions bash`, run by bash.
fn bash_complete(script_dir: &Path, env: &[(&str, &Path)], line: &[&str]) -> Vec<String> {
    let script = script_dir.join("oneshot.bash");
    if !script.exists() {
        let out = Command::new(env!("CARGO_BIN_EXE_oneshot"))
            .args(["completions", "bash"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out));
        std::fs::write(&script, &out.stdout).unwrap();
    }
    let words: Vec<String> = line
        .iter()
        .map(|w| shell_words::quote(w).into_owned())
        .collect();
    let cword = line.len() - 1;
    let prog = format!(
        "source {}; COMP_WORDS=({}); COMP_CWORD={cword}; COMP_TYPE=9; \
         _clap_complete_oneshot oneshot {} {}; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        shell_words::quote(&script.display().to_string()),
        words.join(" "),
        words[cword],
        words[cword - 1],
    );
    let mut c = Command::new("bash");
    c.args(["--norc", "--noprofile", "-c", &prog]);
    for (k, _) in std::env::vars() {
        if k.starts_with("ONESHOT_") {
            c.env_remove(k);
        }
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.current_dir(script_dir).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn completion_offers_session_ids_newest_first() {
    let w = World::new();
    let older = completed(&w, "older");
    let newer = completed(&w, "newer");
    let dir = w.tmp.path();
    let env = [("ONESHOT_STATE_DIR", w.state_dir())];
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    for cmd in [
        &["log"][..],
        &["status"],
        &["resume"],
        &["stop"],
        &["policy", "replay"],
        &["say"],
    ] {
        let mut line = vec!["oneshot"];
        line.extend_from_slice(cmd);
        line.push("");
        let offered = bash_complete(dir, &env, &line);
        let ids: Vec<&String> = offered.iter().filter(|c| !c.starts_with('-')).collect();
        assert_eq!(ids, [&newer, &older], "{line:?}: {offered:?}");
    }
    // What is typed narrows them; `--resume ID` is completed too.
    let offered = bash_complete(dir, &env, &["oneshot", "log", &older[..8]]);
    assert_eq!(offered, [older.as_str()]);
    let offered = bash_complete(dir, &env, &["oneshot", "--resume", &newer[..8]]);
    assert_eq!(offered, [newer.as_str()]);
    // The line's own --state-dir wins over the environment's, as for any command.
    let empty = dir.join("elsewhere");
    let offered = bash_complete(
        dir,
        &env,
        &["oneshot", "--state-dir", empty.to_str().unwrap(), "log", ""],
    );
    assert!(offered.iter().all(|c| c.starts_with('-')), "{offered:?}");
    // Commands and options still complete.
    assert_eq!(bash_complete(dir, &env, &["oneshot", "resu"]), ["resume"]);
    assert_eq!(
        bash_complete(dir, &env, &["oneshot", "log", "--fol"]),
        ["--follow"]
    );
}

#[test]
fn completion_offers_job_ids_newest_first() {
    let env = job_env::Env::new();
    let state = env.state_dir();
    let dir = env.dir.path();
    // No job store yet: nothing offered, and none created by completing.
    let offered = bash_complete(
        dir,
        &[],
        &[
            "oneshot",
            "--state-dir",
            state.to_str().unwrap(),
            "job",
            "show",
            "",
        ],
    );
    assert!(offered.iter().all(|c| c.starts_with('-')), "{offered:?}");
    assert!(!state.join("jobs.db").exists());

    let first = env.create("true", "true", &[]);
    std::thread::sleep(Duration::from_millis(5));
    let second = env.create("true", "true", &[]);
    let via_env = [("ONESHOT_STATE_DIR", state.as_path())];
    for verb in [
        "show", "approve", "reject", "diff", "cleanup", "audit", "step",
    ] {
        let offered = bash_complete(dir, &via_env, &["oneshot", "job", verb, ""]);
        let ids: Vec<&String> = offered.iter().filter(|c| !c.starts_with('-')).collect();
        assert_eq!(ids, [&second, &first], "{verb}: {offered:?}");
    }
    // `say` takes a session's id or a job's: with no session here, the jobs'.
    let offered = bash_complete(dir, &via_env, &["oneshot", "say", ""]);
    let ids: Vec<&String> = offered.iter().filter(|c| !c.starts_with('-')).collect();
    assert_eq!(ids, [&second, &first], "say: {offered:?}");
    // Zsh, fish and PowerShell get each id's state and title (the protocol their scripts use).
    let out = Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .env("ONESHOT_COMPLETE", "fish")
        .env("ONESHOT_STATE_DIR", &state)
        .args(["--", "oneshot", "job", "show", &first])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{first}\tDRAFT write hi to f.txt\n")
    );
}
