//! The task from the command line, a file (`--task-file FILE`) or stdin (`-`), for
//! `oneshot run …` and the implicit `oneshot [OPTIONS] TASK` alike.

use crate::common;
use common::*;
use std::io::Write;
use std::process::Stdio;

/// A worker that saves its prompt (outside the workdir) and an auditor that says done.
fn agents(w: &World) -> (String, String) {
    let seen = w.tmp.path().join("seen");
    let worker = w.script("w.sh", &format!("cat > {}", seen.display()));
    (worker, w.script("a.sh", AUDIT_DONE))
}

fn seen(w: &World) -> String {
    std::fs::read_to_string(w.tmp.path().join("seen")).unwrap()
}

fn with_stdin(mut cmd: std::process::Command, input: &[u8]) -> std::process::Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_task_comes_from_a_file_with_or_without_run() {
    for run in [false, true] {
        let w = World::new();
        let (worker, auditor) = agents(&w);
        let file = w.file("TASK.md", "# fix it\n\nall of it\n");
        let mut cmd = w.cmd();
        if run {
            cmd.arg("run");
        }
        let out = cmd
            .args([
                "--worker-cmd",
                &worker,
                "--auditor-cmd",
                &auditor,
                "--task-file",
            ])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert_eq!(seen(&w), "# fix it\n\nall of it\n");
        assert_eq!(w.session(&w.session_id()).task, "# fix it\n\nall of it\n");
    }
}

#[test]
fn a_dash_reads_the_task_from_stdin_with_or_without_run() {
    for run in [false, true] {
        let w = World::new();
        let (worker, auditor) = agents(&w);
        let mut cmd = w.cmd();
        if run {
            cmd.arg("run");
        }
        cmd.args(["--worker-cmd", &worker, "--auditor-cmd", &auditor, "-"]);
        let out = with_stdin(cmd, b"fix it\nplease\n");
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert_eq!(seen(&w), "fix it\nplease\n");
    }
}

#[test]
fn unusable_task_sources_are_usage_errors_naming_the_source() {
    let w = World::new();
    let (worker, auditor) = agents(&w);
    let missing = w.tmp.path().join("missing.md");
    let binary = w.tmp.path().join("binary.md");
    std::fs::write(&binary, b"fix \xff it").unwrap();
    let blank = w.file("blank.md", " \n\t\n");
    let task_file = |f: &std::path::Path| {
        let mut c = w.cmd();
        c.args([
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            &auditor,
            "--task-file",
        ])
        .arg(f);
        c
    };
    let cases: Vec<(std::process::Output, String)> = vec![
        (
            task_file(&missing).output().unwrap(),
            format!(
                "failed to read the task file {}: No such file",
                missing.display()
            ),
        ),
        (
            task_file(w.tmp.path()).output().unwrap(),
            format!("failed to read the task file {}", w.tmp.path().display()),
        ),
        (
            task_file(&binary).output().unwrap(),
            format!(
                "failed to read the task from {}: it is not UTF-8 text",
                binary.display()
            ),
        ),
        (
            task_file(&blank).output().unwrap(),
            format!("the task read from {} is empty", blank.display()),
        ),
        (
            task_file(&blank).arg("a task too").output().unwrap(),
            "both a task and --task-file".to_string(),
        ),
        (
            with_stdin(
                {
                    let mut c = w.cmd();
                    c.args(["--worker-cmd", &worker, "--auditor-cmd", &auditor, "-"]);
                    c
                },
                b"  \n",
            ),
            "the task read from stdin is empty".to_string(),
        ),
        (
            with_stdin(
                {
                    let mut c = w.cmd();
                    c.args([
                        "run",
                        "--worker-cmd",
                        &worker,
                        "--auditor-cmd",
                        &auditor,
                        "-",
                    ]);
                    c
                },
                b"\xc3\x28",
            ),
            "failed to read the task from stdin: it is not UTF-8 text".to_string(),
        ),
    ];
    for (out, want) in cases {
        assert_eq!(code(&out), 2, "{want}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&want), "want {want:?} in {err}");
    }
    assert!(w.session_ids().is_empty(), "no session may start");
}

#[test]
fn help_shows_the_task_file_and_stdin_examples() {
    let w = World::new();
    let out = w.cmd().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--task-file TASK.md"), "{help}");
    assert!(
        help.contains("oneshot --worker-cmd 'sh fix.sh' --auditor-cmd 'sh check.sh' -"),
        "{help}"
    );
}

#[test]
fn ctrl_c_ends_oneshot_while_it_waits_for_the_task_on_stdin() {
    let w = World::new();
    let (worker, auditor) = agents(&w);
    let mut child = w
        .cmd()
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The pipe stays open: oneshot waits in its read. A Ctrl-C that comes before the read
    // starts is only counted (a session's rule), so press it until oneshot goes.
    let _open = child.stdin.take();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > std::time::Duration::from_secs(5) {
            let _ = child.kill();
            panic!("Ctrl-C did not end oneshot waiting for stdin");
        }
        signal(child.id(), SIGINT);
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(SIGINT), "{status:?}");
    assert!(w.session_ids().is_empty());
}
