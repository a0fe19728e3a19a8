//! Run options typed before a command that starts no session are a usage error naming the
//! option; the same settings from the environment are not.

use crate::common;
use common::*;

#[test]
fn run_options_on_another_command_are_refused_by_name() {
    let w = World::new();
    for (args, flag) in [
        (&["--worker-cmd", "x", "list"][..], "--worker-cmd"),
        (&["--policy", "p.lua", "status"], "--policy"),
        (&["--auditor-cmd", "y", "log", "abc"], "--auditor-cmd"),
        (
            &["--hook-budget", "1s", "policy", "check", "p.lua"],
            "--hook-budget",
        ),
        (
            &["--policy-reload", "off", "list", "--json"],
            "--policy-reload",
        ),
    ] {
        let out = w.cmd().args(args).output().unwrap();
        assert_eq!(code(&out), 2, "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!(
                "oneshot: error: failed to read the command line: {flag} is an option of a new \
                 session, which `oneshot {}` does not start;",
                args[2]
            )),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out));
    }
    // Before `run` they would be ignored too: put them after it.
    let out = w
        .cmd()
        .args(["--worker-cmd", "x", "run", "--auditor-cmd", "y", "task"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--worker-cmd was given before `run`"),
        "{}",
        text(&out)
    );
    // Before `resume`, the options it takes go after it.
    let out = w
        .cmd()
        .args(["--policy", "p.lua", "resume", "abc"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "oneshot: error: failed to read the command line: --policy was given before `resume`, \
         where it is not read; put it after `resume` (oneshot resume --policy … ID)\n"
    );
    assert!(w.session_ids().is_empty(), "nothing was started");
}

#[test]
fn the_same_settings_from_the_environment_are_fine() {
    let w = World::new();
    let out = w
        .cmd()
        .env("ONESHOT_WORKER_CMD", "x")
        .env("ONESHOT_AUDITOR_CMD", "y")
        .env("ONESHOT_POLICY", "p.lua")
        .env("ONESHOT_POLICY_PATH", "/a:/b")
        .arg("list")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("no sessions under"),
        "{}",
        text(&out)
    );
}
