//! Prompts of any size reach the agents: on stdin and in `$ONESHOT_PROMPT_FILE` always,
//! in `$ONESHOT_PROMPT` and `{prompt}` only when they fit; a task that cannot fit a command's
//! argv is refused before a session exists.

use crate::common;
use common::*;

/// A script that keeps what it was given under `dump/ROLE.*` (outside the workdir): stdin, a
/// copy of the prompt file, the file's path and mode, whether ONESHOT_PROMPT was set, and `$1`.
fn recorder(w: &World, name: &str, then: &str) -> String {
    let dump = w.tmp.path().join("dump");
    std::fs::create_dir_all(&dump).unwrap();
    let d = dump.display();
    w.script(
        name,
        &format!(
            "r={d}/$ONESHOT_ROLE\n\
             cat > $r.stdin\n\
             cp \"$ONESHOT_PROMPT_FILE\" $r.file\n\
             echo \"$ONESHOT_PROMPT_FILE\" > $r.path\n\
             stat -c %a \"$ONESHOT_PROMPT_FILE\" > $r.mode\n\
             printf %s \"${{ONESHOT_PROMPT+set}}\" > $r.env\n\
             printf %s \"$1\" > $r.arg\n\
             {then}\n"
        ),
    )
}

fn dumped(w: &World, file: &str) -> String {
    std::fs::read_to_string(w.tmp.path().join("dump").join(file)).unwrap()
}

/// About 200 KB of task, not all one character, ending in a marker.
fn big_task() -> String {
    let mut t: String = (0..20_000).map(|i| format!("line{i:05}\n")).collect();
    t.push_str("END OF TASK");
    assert!(t.len() > 200_000);
    t
}

#[test]
fn a_200_kb_task_reaches_worker_and_auditor_on_stdin_and_in_the_file() {
    let w = World::new();
    let task = big_task();
    let task_file = w.file("task.txt", &task);
    let worker = recorder(&w, "w.sh", "echo worked");
    let auditor = recorder(&w, "a.sh", "echo 'VERDICT: DONE'");
    let out = w
        .cmd()
        // An inherited prompt must not pass for this one.
        .env("ONESHOT_PROMPT", "stale")
        .args([
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            &auditor,
            "--task-file",
        ])
        .arg(&task_file)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(w.trace(&id).last().unwrap(), "COMPLETED");
    assert_eq!(dumped(&w, "worker.stdin"), task, "worker stdin");
    assert_eq!(dumped(&w, "worker.file"), task, "worker prompt file");
    let audit = dumped(&w, "auditor.stdin");
    assert_eq!(dumped(&w, "auditor.file"), audit, "auditor prompt file");
    assert!(
        audit.contains(&task),
        "the audit prompt holds the whole task"
    );
    for role in ["worker", "auditor"] {
        assert_eq!(
            dumped(&w, &format!("{role}.env")),
            "",
            "{role}: ONESHOT_PROMPT is unset"
        );
        assert_eq!(dumped(&w, &format!("{role}.mode")).trim(), "600");
        let path = std::path::PathBuf::from(dumped(&w, &format!("{role}.path")).trim());
        assert!(
            !path.starts_with(w.work()),
            "{} is in the workdir",
            path.display()
        );
        assert!(!path.exists(), "{} outlived its process", path.display());
    }
    // The file never counts as the worker's change.
    assert!(w.session(&id).changed_files.is_empty());
}

#[test]
fn a_small_prompt_is_also_in_oneshot_prompt_and_argv() {
    let w = World::new();
    let worker = format!("{} {{prompt}}", recorder(&w, "w.sh", "true"));
    let out = w.run(&worker, &w.script("a.sh", AUDIT_DONE), &[], "small task");
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(dumped(&w, "worker.env"), "set");
    assert_eq!(dumped(&w, "worker.arg"), "small task");
    assert_eq!(dumped(&w, "worker.file"), "small task");
    assert_eq!(dumped(&w, "worker.stdin"), "small task");
}

#[test]
fn a_task_too_large_for_prompt_in_argv_is_refused_before_a_session_exists() {
    for role in ["worker", "auditor"] {
        let w = World::new();
        let task_file = w.file("task.txt", &big_task());
        let plain = w.script("plain.sh", "cat >/dev/null; echo 'VERDICT: DONE'");
        let in_argv = format!("{} {{prompt}}", w.script("argv.sh", "true"));
        let (worker, auditor) = match role {
            "worker" => (&in_argv, &plain),
            _ => (&plain, &in_argv),
        };
        let out = w
            .cmd()
            .args([
                "run",
                "--worker-cmd",
                worker,
                "--auditor-cmd",
                auditor,
                "--task-file",
            ])
            .arg(&task_file)
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "failed to pass the {}-byte task to the {role} command `{in_argv}`",
                big_task().len()
            )),
            "{err}"
        );
        assert!(err.contains("$ONESHOT_PROMPT_FILE"), "{err}");
        assert!(w.session_ids().is_empty(), "a session was created");
    }
}

#[test]
fn a_later_prompt_too_large_for_argv_points_to_the_file_and_the_session_completes() {
    let w = World::new();
    // The task fits argv; the audit prompt (task + 64 KiB of worker output) does not.
    let task = "t".repeat(60 * 1024);
    let task_file = w.file("task.txt", &task);
    let worker = w.script(
        "w.sh",
        "i=0; while [ $i -lt 1000 ]; do printf '%070d\\n' $i; i=$((i+1)); done",
    );
    let auditor = format!(
        "{} {{prompt}}",
        recorder(&w, "a.sh", "echo 'VERDICT: DONE'")
    );
    let out = w
        .cmd()
        .args([
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            &auditor,
            "--task-file",
        ])
        .arg(&task_file)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let audit = dumped(&w, "auditor.file");
    assert!(audit.len() > 100 * 1024 && audit.contains(&task));
    assert_eq!(dumped(&w, "auditor.stdin"), audit);
    let arg = dumped(&w, "auditor.arg");
    let path = dumped(&w, "auditor.path");
    assert!(arg.contains(path.trim()), "argv points to the file: {arg}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the auditor prompt is") && err.contains("$ONESHOT_PROMPT_FILE"),
        "{err}"
    );
}

#[test]
fn the_prompt_file_goes_with_the_agent_when_oneshot_is_killed() {
    let w = World::new();
    let named = w.tmp.path().join("prompt-path");
    let worker = w.script(
        "w.sh",
        &format!(
            "echo \"$ONESHOT_PROMPT_FILE\" > {n}.tmp; mv {n}.tmp {n}; sleep 60",
            n = named.display()
        ),
    );
    let mut child = w.spawn(&worker, &w.script("a.sh", AUDIT_DONE), &["-q"], "the task");
    assert!(
        eventually(std::time::Duration::from_secs(10), || named.exists()),
        "the worker never started"
    );
    let path = std::path::PathBuf::from(std::fs::read_to_string(&named).unwrap().trim());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "the task");
    signal(child.id(), SIGKILL);
    wait_timeout(&mut child, std::time::Duration::from_secs(10));
    assert!(
        eventually(std::time::Duration::from_secs(10), || !path.exists()
            && !path.parent().unwrap().exists()),
        "{} outlived a killed oneshot",
        path.display()
    );
}
