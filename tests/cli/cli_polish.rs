//! The polish of the command line: completions, the man page, `--version`, `--color`, `-v`,
//! help examples and headings, and `run --json`.

use crate::common;

use common::{World, code, text};
use serde_json::Value;

/// The subcommands `args --help` lists (under "Commands:"), `help` aside: read from the
/// binary, so a command added later is held to the same rules.
fn subcommands(w: &World, args: &[&str]) -> Vec<String> {
    let out = w.cmd().args(args).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let listed: Vec<String> = help
        .split("Commands:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no Commands: in\n{help}"))
        .lines()
        .take_while(|l| l.starts_with("  "))
        // A description that wraps continues further in.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(listed.len() >= 2, "{help}");
    listed
}

/// Each script registers the completion for `oneshot` and calls the binary back at each TAB
/// (what it offers is tested through bash in tests/cli/cli_ids.rs).
#[test]
fn completions_are_generated_for_every_supported_shell() {
    let w = World::new();
    let bin = env!("CARGO_BIN_EXE_oneshot");
    for (shell, marker) in [
        ("bash", "-F _clap_complete_oneshot oneshot"),
        ("zsh", "#compdef oneshot"),
        (
            "fish",
            "complete --keep-order --exclusive --command oneshot",
        ),
        ("elvish", "edit:completion:arg-completer[oneshot]"),
        (
            "powershell",
            "Register-ArgumentCompleter -Native -CommandName oneshot",
        ),
    ] {
        let out = w.cmd().args(["completions", shell]).output().unwrap();
        assert_eq!(code(&out), 0, "{shell}: {}", text(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains(marker),
            "{shell}: no {marker:?} in\n{script}"
        );
        assert!(
            script.contains("ONESHOT_COMPLETE"),
            "{shell}: the script does not ask for completions:\n{script}"
        );
        assert!(
            script.contains(bin),
            "{shell}: it does not call {bin}:\n{script}"
        );
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let w = World::new();
    let out = w.cmd().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
    assert!(err.contains("bash, elvish, fish, powershell, zsh"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn the_man_page_is_roff_and_names_every_subcommand() {
    let w = World::new();
    let out = w.cmd().arg("man").output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH oneshot"),
        "{page}"
    );
    let all = subcommands(&w, &[]);
    for sub in [
        "run",
        "resume",
        "status",
        "list",
        "log",
        "policy",
        "completions",
        "man",
    ] {
        assert!(
            all.iter().any(|s| s == sub),
            "{sub} is not in --help: {all:?}"
        );
    }
    for sub in &all {
        assert!(
            page.contains(&format!("oneshot\\-{sub}")) || page.contains(&format!("\n{sub}")),
            "the man page does not mention {sub}:\n{page}"
        );
    }
}

#[test]
fn version_names_the_commit_and_its_date() {
    let w = World::new();
    let out = w.cmd().arg("--version").output().unwrap();
    assert_eq!(code(&out), 0);
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let pkg = env!("CARGO_PKG_VERSION");
    // Built from a git checkout (as the tests are): `oneshot 0.1.0 (3a47567 2026-11-23)`.
    let inside_git = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success());
    match inside_git {
        Some(o) => {
            let hash = String::from_utf8_lossy(&o.stdout).trim().to_string();
            let rest = line
                .strip_prefix(&format!("oneshot {pkg} ("))
                .unwrap_or_else(|| panic!("{line}"));
            let (commit, date) = rest.trim_end_matches(')').split_once(' ').unwrap();
            // The test binary may be older than HEAD by a commit; the shape is what counts.
            assert_eq!(commit.len(), hash.len(), "{line}");
            assert!(commit.bytes().all(|b| b.is_ascii_hexdigit()), "{line}");
            assert_eq!(date.len(), 10, "{line}");
            assert_eq!(date.as_bytes()[4], b'-', "{line}");
        }
        None => assert_eq!(line, format!("oneshot {pkg}")),
    }
}

#[test]
fn every_subcommand_help_has_examples_and_global_options_have_a_heading() {
    let w = World::new();
    let mut helps: Vec<Vec<String>> = subcommands(&w, &[]).into_iter().map(|s| vec![s]).collect();
    for sub in subcommands(&w, &["policy"]) {
        helps.push(vec!["policy".to_string(), sub]);
    }
    assert!(helps.len() >= 13, "{helps:?}");
    for args in helps {
        let out = w.cmd().args(&args).arg("--help").output().unwrap();
        assert_eq!(code(&out), 0, "{args:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        let examples = help
            .split("Examples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{args:?} --help has no Examples:\n{help}"));
        let lines = examples
            .lines()
            .filter(|l| l.trim_start().starts_with("oneshot ") || l.contains("oneshot "))
            .count();
        assert!(lines >= 2, "{args:?}: fewer than 2 examples:\n{help}");
        assert!(help.contains("Global options:"), "{args:?}:\n{help}");
        let global = help.split("Global options:").nth(1).unwrap();
        for flag in ["--state-dir", "--quiet", "--verbose", "--color"] {
            assert!(
                global.contains(flag),
                "{args:?}: {flag} not under Global options"
            );
        }
    }
}

fn happy(w: &World) -> (String, String) {
    (
        w.script("w.sh", "echo '\x1b[31mworking\x1b[0m'"),
        w.script("a.sh", "echo 'VERDICT: DONE'"),
    )
}

#[test]
fn color_always_paints_states_and_never_and_no_color_do_not() {
    let w = World::new();
    let (worker, auditor) = happy(&w);
    let out = w.run(&worker, &auditor, &["--color", "always"], "t");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\x1b[1;32mCOMPLETED\x1b[0m"), "{err:?}");
    // With colour on, the agent's own colours pass.
    assert!(String::from_utf8_lossy(&out.stdout).contains("\x1b[31mworking"));

    for (flag, env) in [("never", None), ("auto", Some("1")), ("always", None)] {
        let mut cmd = w.cmd();
        cmd.args(["--worker-cmd", &worker, "--auditor-cmd", &auditor]);
        cmd.args(["--color", flag]);
        if flag == "always" {
            // `--color always` wins over NO_COLOR: the flag is the more specific choice.
            cmd.env("NO_COLOR", "1");
        } else if let Some(v) = env {
            cmd.env("CLICOLOR_FORCE", "0").env("NO_COLOR", v);
        }
        let out = cmd.arg("t").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if flag == "always" {
            assert!(err.contains('\x1b'), "{flag}: {err:?}");
        } else {
            assert!(!err.contains('\x1b'), "{flag}: {err:?}");
            assert!(!stdout.contains('\x1b'), "{flag}: {stdout:?}");
            assert!(stdout.contains("[worker] working"), "{flag}: {stdout:?}");
        }
    }
    // CLICOLOR_FORCE colours even into a pipe.
    let out = w
        .cmd()
        .env("CLICOLOR_FORCE", "1")
        .env_remove("NO_COLOR")
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor, "t"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("\x1b[1;32m"));
}

#[test]
fn a_bad_color_value_is_a_usage_error() {
    let w = World::new();
    let out = w
        .cmd()
        .args(["--color", "sometimes", "list"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'sometimes' for '--color <WHEN>'"),
        "{err}"
    );
}

#[test]
fn verbose_adds_oneshots_own_lines_and_not_its_dependencies() {
    let w = World::new();
    let (worker, auditor) = happy(&w);
    let quiet = w.run(&worker, &auditor, &[], "t");
    let verbose = w.run(&worker, &auditor, &["-vv"], "t");
    assert_eq!(code(&verbose), 0, "{}", text(&verbose));
    let err = String::from_utf8_lossy(&verbose.stderr);
    let own = err.lines().filter(|l| l.contains(" oneshot::")).count();
    assert!(own > 0, "-vv printed none of oneshot's own lines:\n{err}");
    for l in err.lines() {
        if let Some(rest) = l
            .strip_prefix("oneshot: debug ")
            .or(l.strip_prefix("oneshot: info "))
        {
            assert!(
                rest.starts_with("oneshot"),
                "a dependency's line at -vv: {l}"
            );
        }
    }
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("oneshot: debug"));
}

#[test]
fn run_json_streams_transitions_and_ends_with_the_outcome() {
    let w = World::new();
    let worker = w.script("w.sh", "echo working; echo 'secret-free line'");
    let auditor = w.script(
        "a.sh",
        "if [ \"$ONESHOT_ITERATION\" = 1 ]; then echo 'VERDICT: RETRY again'; else echo 'VERDICT: DONE'; fi",
    );
    let out = w.run(&worker, &auditor, &["--json"], "t");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert!(lines.len() >= 4, "{stdout}");
    for (l, raw) in lines.iter().zip(stdout.lines()) {
        assert!(l["type"].is_string(), "no type: {l}");
        assert!(raw.starts_with("{\"type\":"), "type is not first: {raw}");
    }
    let first = &lines[0];
    assert_eq!(first["type"], "session");
    let id = first["session_id"].as_str().unwrap();
    assert_eq!(id, w.session_id());
    assert!(first["workdir"].as_str().unwrap().ends_with("work"));
    let transitions: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["type"] == "transition")
        .map(|l| (l["from"].as_str().unwrap(), l["to"].as_str().unwrap()))
        .collect();
    assert_eq!(transitions.first(), Some(&("CREATED", "WORKER_EXECUTING")));
    assert!(transitions.contains(&("AUDITOR_EXECUTING", "REITERATION_PENDING")));
    assert_eq!(
        transitions.last(),
        Some(&("AUDITOR_EXECUTING", "COMPLETED"))
    );
    let retry = lines
        .iter()
        .find(|l| l["to"] == "REITERATION_PENDING")
        .unwrap();
    assert_eq!(retry["reason"]["kind"], "verdict");
    assert_eq!(retry["reason_text"], "retry: again");
    assert!(retry["at"].as_str().unwrap().ends_with('Z'));
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "outcome", "{last}");
    assert_eq!(last["state"], "COMPLETED");
    assert_eq!(last["iteration_count"], 2);
    assert_eq!(last["exit_code"], 0);
    assert!(last["elapsed_ms"].is_u64());
    // No agent output and no human lines on stdout; stderr is quiet.
    assert!(!stdout.contains("working"), "{stdout}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn run_json_outcome_of_a_failure_names_its_cause() {
    let w = World::new();
    let worker = w.script("w.sh", "exit 3");
    let auditor = w.script("a.sh", "echo 'VERDICT: DONE'");
    let out = w.run(&worker, &auditor, &["--json"], "t");
    assert_eq!(code(&out), 1, "{}", text(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "outcome");
    assert_eq!(last["state"], "FAILED");
    assert_eq!(last["cause"]["kind"], "exited");
    assert_eq!(last["cause"]["code"], 3);
    assert_eq!(last["exit_code"], 1);
}

#[test]
fn the_final_line_says_the_cause_the_iterations_and_the_time() {
    let w = World::new();
    let worker = w.script("w.sh", "exit 3");
    let auditor = w.script("a.sh", "echo 'VERDICT: DONE'");
    let out = w.run(&worker, &auditor, &[], "t");
    assert_eq!(code(&out), 1);
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap();
    assert!(
        last.contains("FAILED: the worker exited with code 3, then salvage nothing"),
        "{last}"
    );
    assert!(
        last.contains("(1 of 5 iterations, 0s)") || last.contains("(1 of 5 iterations, 1s)"),
        "{last}"
    );
}

#[test]
fn run_json_with_resume_is_refused() {
    let w = World::new();
    let out = w
        .cmd()
        .args(["run", "--resume", "abc", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'--resume <ID>' cannot be used with '--json'"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
