//! What the real binary says when something goes wrong, and the exit code it says it with
//! (`src/cli/exit.rs`): one `oneshot: error: failed to …` line that names the file or session,
//! prints each cause exactly once and says what to do next; survivable problems as
//! `oneshot: warning: …` while the session goes on.

use crate::common;
use common::*;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const ENOENT: &str = "No such file or directory (os error 2)";

/// The binary with an explicit `--state-dir` and no inherited ONESHOT_* settings.
fn oneshot(w: &World, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_oneshot"));
    for (k, _) in std::env::vars() {
        if k.starts_with("ONESHOT_") {
            c.env_remove(k);
        }
    }
    c.arg("--state-dir")
        .arg(w.state_dir())
        .args(args)
        .current_dir(w.work())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The one error line: exactly one, and it is the last thing said.
fn error_line(out: &Output) -> String {
    let err = stderr(out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("oneshot: error: "))
        .collect();
    assert_eq!(lines.len(), 1, "expected one error line:\n{}", text(out));
    assert_eq!(err.lines().last(), Some(lines[0]), "{}", text(out));
    lines[0].to_string()
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// A session that ran to COMPLETED; its id.
fn completed_session(w: &World) -> String {
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = oneshot(
        w,
        &[
            "--worker-cmd",
            "true",
            "--auditor-cmd",
            &auditor,
            "the task",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    w.session_id()
}

#[test]
fn a_missing_policy_file_is_named_with_its_os_error_once_and_exits_2() {
    let w = World::new();
    let policy = w.tmp.path().join("missing.lua");
    let policy = policy.to_str().unwrap();
    let out = oneshot(
        &w,
        &[
            "--policy",
            policy,
            "--worker-cmd",
            "true",
            "--auditor-cmd",
            "true",
            "the task",
        ],
    );
    assert_eq!(code(&out), 2, "{}", text(&out));
    let line = error_line(&out);
    assert_eq!(
        line,
        format!("oneshot: error: failed to read policy {policy}: {ENOENT}")
    );
    assert_eq!(count(&stderr(&out), "No such file or directory"), 1);
    assert!(w.session_ids().is_empty(), "nothing may start");

    // `policy check` says it the same way.
    let out = oneshot(&w, &["policy", "check", policy]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert_eq!(
        error_line(&out),
        format!("oneshot: error: failed to read policy {policy}: {ENOENT}")
    );
}

#[test]
fn a_policy_deleted_while_paused_is_named_once_on_resume() {
    // The case of the issue: the recorded policy went missing and `resume` printed the OS
    // error twice (the engine's error forwarded both the message and the source).
    let w = World::new();
    let policy = w.policy("return {}");
    let marker = w.tmp.path().join("started");
    let worker = w.script("w.sh", &format!("touch {}; sleep 60", marker.display()));
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &["--policy", &policy], "t");
    w.wait_for(&marker, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    signal(child.id(), SIGINT);
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(15)).code(),
        Some(130)
    );
    let id = w.session_id();
    std::fs::remove_file(&policy).unwrap();

    let out = oneshot(&w, &["resume", &id]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    let line = error_line(&out);
    assert!(
        line.starts_with("oneshot: error: failed to read policy ") && line.contains("p.lua"),
        "{line}"
    );
    assert_eq!(count(&stderr(&out), "No such file or directory"), 1);
    assert_eq!(count(&stderr(&out), "(os error 2)"), 1);
}

#[test]
fn an_unknown_session_is_named_with_a_hint_and_exits_2() {
    let w = World::new();
    let policy = w.policy("return {}");
    let sessions = w.state_dir().join("sessions");
    let want = format!(
        "oneshot: error: failed to find session `nope123` under {}; run `oneshot list` to see \
         the sessions there",
        sessions.display()
    );
    for args in [
        &["status", "nope123"][..],
        &["resume", "nope123"],
        &["--resume", "nope123"],
        &["log", "nope123"],
        &["policy", "replay", "nope123", "--policy", &policy],
    ] {
        let out = oneshot(&w, args);
        assert_eq!(code(&out), 2, "{args:?}: {}", text(&out));
        let line = error_line(&out);
        assert_eq!(line, want, "{args:?}");
        assert_eq!(count(&line, "nope123"), 1, "{line}");
        assert_eq!(count(&line, "oneshot list"), 1, "{line}");
    }
}

#[test]
fn a_corrupt_state_file_is_named_and_exits_1() {
    let w = World::new();
    let dir = w.state_dir().join("sessions").join("0123abcd");
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("oneshot.json");
    std::fs::write(&state, "{\"schema\": 2, \"state\": ").unwrap();
    for args in [&["status", "0123"][..], &["resume", "0123"]] {
        let out = oneshot(&w, args);
        assert_eq!(code(&out), 1, "{args:?}: {}", text(&out));
        let line = error_line(&out);
        assert!(
            line.starts_with(&format!(
                "oneshot: error: failed to read state file {}: it is corrupt (",
                state.display()
            )),
            "{line}"
        );
        assert_eq!(count(&line, &state.display().to_string()), 1, "{line}");
        assert!(
            line.ends_with("the activity log beside it is intact"),
            "{line}"
        );
    }
    // Untouched, and `list` still lists the others, marking this one.
    assert_eq!(
        std::fs::read_to_string(&state).unwrap(),
        "{\"schema\": 2, \"state\": "
    );
    let out = oneshot(&w, &["list"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("unreadable: failed to read state file"),
        "{listed}"
    );
}

#[test]
fn a_missing_worker_program_names_the_role_and_workdir_and_exits_2() {
    let w = World::new();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = oneshot(
        &w,
        &[
            "--worker-cmd",
            "no-such-oneshot-worker {prompt}",
            "--auditor-cmd",
            &auditor,
            "the task",
        ],
    );
    assert_eq!(code(&out), 2, "{}", text(&out));
    let work = w.work().canonicalize().unwrap_or_else(|_| w.work());
    let line = error_line(&out);
    assert!(
        line.starts_with(
            "oneshot: error: failed to find worker command 'no-such-oneshot-worker': no such \
             file in PATH or relative to "
        ),
        "{line}"
    );
    assert!(
        line.contains(&w.work().display().to_string())
            || line.contains(&work.display().to_string()),
        "{line}"
    );
    assert!(
        line.ends_with("; install it or fix the command line"),
        "{line}"
    );
    assert_eq!(count(&line, "no-such-oneshot-worker"), 1, "{line}");
    assert!(w.session_ids().is_empty(), "nothing may start");
}

#[test]
fn a_policy_syntax_error_names_file_and_line_and_exits_2() {
    let w = World::new();
    let policy = w.policy("return {\n  limits = { max_iterations = },\n}\n");
    for args in [
        &[
            "--policy",
            &policy,
            "--worker-cmd",
            "true",
            "--auditor-cmd",
            "true",
            "the task",
        ][..],
        &["policy", "check", &policy],
        &["policy", "test", &policy],
    ] {
        let out = oneshot(&w, args);
        assert_eq!(code(&out), 2, "{args:?}: {}", text(&out));
        let line = error_line(&out);
        assert!(
            line.starts_with("oneshot: error: failed to load policy p.lua:2: "),
            "{args:?}: {line}"
        );
        assert_eq!(count(&line, "p.lua:2"), 1, "{line}");
    }
    assert!(w.session_ids().is_empty(), "nothing may start");
}

#[test]
fn a_locked_session_names_the_holder_and_exits_4_and_a_finished_one_is_refused() {
    let w = World::new();
    let id = completed_session(&w);
    let lock = oneshot::store::SessionLock::acquire(&w.session_dir(&id).join("lock")).unwrap();
    let out = oneshot(&w, &["resume", &id[..8]]);
    assert_eq!(code(&out), 4, "{}", text(&out));
    assert_eq!(
        error_line(&out),
        format!(
            "oneshot: error: failed to lock session {id}: pid {} holds it; wait for it to \
             finish or stop it",
            std::process::id()
        )
    );
    drop(lock);

    let out = oneshot(&w, &["resume", &id[..8]]);
    assert_eq!(code(&out), 4, "{}", text(&out));
    assert_eq!(
        error_line(&out),
        format!(
            "oneshot: error: failed to resume session {id}: it is COMPLETED; there is nothing \
             left to do"
        )
    );
}

#[test]
fn usage_errors_exit_2_and_say_what_to_write() {
    let w = World::new();
    let out = oneshot(&w, &[]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    let line = error_line(&out);
    assert!(
        line.starts_with("oneshot: error: failed to start a session: no task given;"),
        "{line}"
    );
    assert!(line.contains("oneshot --help"), "{line}");

    let out = oneshot(
        &w,
        &["--worker", "cluade", "--auditor-cmd", "true", "the task"],
    );
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        error_line(&out).contains("unknown agent \"cluade\"")
            && error_line(&out).contains("did you mean claude?"),
        "{}",
        text(&out)
    );
    let out = oneshot(
        &w,
        &[
            "--worker-cmd",
            "true",
            "--auditor-cmd",
            "true",
            "--worker-arg=-x",
            "t",
        ],
    );
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(error_line(&out).contains("--worker-arg"), "{}", text(&out));

    let out = oneshot(&w, &["--worker-cmd", "true", "the task"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        error_line(&out).contains("it needs an auditor: --auditor AGENT[:MODEL]"),
        "{}",
        text(&out)
    );

    let out = oneshot(&w, &["status"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        error_line(&out)
            .starts_with("oneshot: error: failed to show the latest session: there are none under"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_hook_that_fails_open_is_a_warning_and_the_session_goes_on() {
    let w = World::new();
    let policy = w.policy("return {\n  on_transition = function() error('boom') end,\n}\n");
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = oneshot(
        &w,
        &[
            "--policy",
            &policy,
            "--worker-cmd",
            "true",
            "--auditor-cmd",
            &auditor,
            "the task",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let err = stderr(&out);
    assert!(!err.contains("oneshot: error:"), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("boom")).collect();
    assert!(!warnings.is_empty(), "{err}");
    for line in warnings {
        assert!(
            line.starts_with("oneshot: warning: after ")
                && line.contains(": failed to run hook on_transition: p.lua:2: ")
                && (line.ends_with("on_transition fails open, so the session goes on")
                    || line.ends_with("the session has ended anyway")),
            "{line}"
        );
        assert_eq!(count(line, "boom"), 1, "{line}");
    }
}

/// A typo never starts an agent: a one-word task close to a command is refused with a hint,
/// an empty task is refused, and `oneshot run WORD` still runs a one-word task.
#[test]
fn a_mistyped_command_or_an_empty_task_starts_nothing() {
    let w = World::new();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let with_cmds = |args: &[&str]| {
        w.cmd()
            .env("ONESHOT_WORKER_CMD", "echo worked")
            .env("ONESHOT_AUDITOR_CMD", &auditor)
            .args(args)
            .output()
            .unwrap()
    };
    for (typo, want) in [("stauts", "status"), ("lsit", "list"), ("resmue", "resume")] {
        let out = with_cmds(&[typo]);
        assert_eq!(code(&out), 2, "{typo}: {}", text(&out));
        assert!(
            text(&out).contains(&format!("did you mean `oneshot {want}`")),
            "{}",
            text(&out)
        );
    }
    for empty in ["", "   "] {
        let out = with_cmds(&[empty]);
        assert_eq!(code(&out), 2, "{empty:?}: {}", text(&out));
        assert!(text(&out).contains("the task is empty"), "{}", text(&out));
    }
    assert!(w.session_ids().is_empty(), "nothing was started");
    // A real one-word task: as is when it is no near-command, through `run` when it is.
    assert_eq!(code(&with_cmds(&["test"])), 0);
    assert_eq!(code(&with_cmds(&["run", "lint"])), 0);
    assert_eq!(w.session_ids().len(), 2);
}

/// An unquoted task and a task given with a command are errors that say what to do.
#[test]
fn an_unquoted_task_or_a_task_with_a_command_is_explained() {
    let w = World::new();
    let out = w
        .cmd()
        .args(["--worker-cmd", "echo x", "fix", "the", "bug"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("quote it"), "{}", text(&out));
    assert!(text(&out).contains("'fix the bug'"), "{}", text(&out));
    let out = w.cmd().args(["fix it", "list"]).output().unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("a task (\"fix it\") and a command"),
        "{}",
        text(&out)
    );
    assert!(w.session_ids().is_empty());
}

/// `oneshot run --resume ID` resumes, as `oneshot --resume ID` and `oneshot resume ID` do.
#[test]
fn run_with_resume_resumes() {
    let w = World::new();
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "t");
    w.wait_for(&marker, std::time::Duration::from_secs(10));
    signal(child.id(), libc::SIGINT);
    wait_timeout(&mut child, std::time::Duration::from_secs(15));
    let id = w.session_id();
    let out = w.cmd().args(["run", "--resume", &id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(w.trace(&id).last().unwrap(), "COMPLETED");
}

/// The commands `oneshot [ARGS] --help` lists under "Commands:" (`help` aside).
fn listed_commands(w: &World, args: &[&str]) -> Vec<String> {
    let out = w.cmd().args(args).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some(list) = help.split("Commands:\n").nth(1) else {
        return Vec::new();
    };
    list.lines()
        .take_while(|l| l.starts_with("  "))
        // A description that wraps continues further in.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

/// A mistyped verb of any command group (`job`, `policy`, `schema`, and whichever group is
/// added later: they are read from the binary's help) gets "did you mean" with the nearest
/// verb, as a mistyped command does; it is never read as a task, and a group without a verb
/// shows its verbs.
#[test]
fn a_mistyped_or_missing_verb_of_a_command_group_starts_nothing() {
    let w = World::new();
    let auditor = w.script("a.sh", AUDIT_DONE);
    // With agents configured, a line read as a task would start a session.
    let with_cmds = |args: &[&str]| {
        w.cmd()
            .env("ONESHOT_WORKER_CMD", "echo worked")
            .env("ONESHOT_AUDITOR_CMD", &auditor)
            .args(args)
            .output()
            .unwrap()
    };
    let groups: Vec<(String, Vec<String>)> = listed_commands(&w, &[])
        .into_iter()
        .map(|c| {
            let verbs = listed_commands(&w, &[&c]);
            (c, verbs)
        })
        .filter(|(_, verbs)| !verbs.is_empty())
        .collect();
    let names: Vec<&str> = groups.iter().map(|(g, _)| g.as_str()).collect();
    for g in ["job", "policy", "schema"] {
        assert!(names.contains(&g), "{g} not among the groups {names:?}");
    }
    for (group, verbs) in &groups {
        // The first verb with two letters swapped (`create` → `cerate`), and an argument.
        let verb = &verbs[0];
        let mut typo: Vec<char> = verb.chars().collect();
        typo.swap(1, 2);
        let typo: String = typo.into_iter().collect();
        let out = with_cmds(&[group, &typo, "x-1"]);
        assert_eq!(code(&out), 2, "{group} {typo}: {}", text(&out));
        assert_eq!(
            error_line(&out),
            format!(
                "oneshot: error: failed to run `oneshot {group} {typo}`: there is no such verb; \
                 did you mean `oneshot {group} {verb}`? (`oneshot {group} --help` says what \
                 each does)"
            )
        );
        assert!(!text(&out).contains("quote it"), "{}", text(&out));

        // No verb at all: exit 2 with the verbs on stderr — the group's help, or clap's list
        // when an environment variable already gave an option (here ONESHOT_STATE_DIR).
        for out in [
            with_cmds(&[group]),
            w.cmd()
                .env_remove("ONESHOT_STATE_DIR")
                .arg(group)
                .output()
                .unwrap(),
        ] {
            assert_eq!(code(&out), 2, "{group}: {}", text(&out));
            let err = stderr(&out);
            assert!(err.contains(&format!("Usage: oneshot {group}")), "{err}");
            let listed: Vec<&str> = match err.split_once("[subcommands: ") {
                Some((_, list)) => list.split(']').next().unwrap().split(", ").collect(),
                None => err
                    .split("Commands:\n")
                    .nth(1)
                    .unwrap_or_else(|| panic!("{group}: no verbs in {err}"))
                    .lines()
                    .filter_map(|l| l.strip_prefix("  ")?.split_whitespace().next())
                    .collect(),
            };
            for v in verbs {
                assert!(
                    listed.contains(&v.as_str()),
                    "{group}: {v} missing in {err}"
                );
            }
        }
    }
    // The issue's own line, a word near no verb, and an option's value before the verb.
    let out = with_cmds(&["job", "aprove", "job-123"]);
    assert!(
        error_line(&out).contains("did you mean `oneshot job approve`?"),
        "{}",
        text(&out)
    );
    let out = with_cmds(&["policy", "frobnicate", "p.lua"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        error_line(&out).contains("the verbs of `oneshot policy` are check, test, replay"),
        "{}",
        text(&out)
    );
    let registry = w.tmp.path().display().to_string();
    let out = with_cmds(&["schema", "--registry", &registry, "lst"]);
    assert!(
        error_line(&out).contains("did you mean `oneshot schema list`?"),
        "{}",
        text(&out)
    );
    assert!(w.session_ids().is_empty(), "nothing was started");
}

/// An empty ONESHOT_* variable means unset (users set `ONESHOT_STATE_DIR=` to clear a default),
/// not "a value is required".
#[test]
fn an_empty_oneshot_variable_is_unset() {
    let w = World::new();
    let home = w.tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .env("HOME", &home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("ONESHOT_STATE_DIR", "")
        .env("ONESHOT_WORKER", "")
        .args(["list"])
        .current_dir(w.work())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("a value is required"),
        "{}",
        stderr(&out)
    );
}
