//! `oneshot say ID MESSAGE`: a human's message reaches the session's worker — into the
//! running agent where its protocol allows (tests/agents/ drive the real CLIs), else in the
//! next worker prompt — recorded as `message` records, kept across a pause, and redacted.

use crate::common;
use common::*;
use std::time::Duration;

/// A worker that saves each prompt it gets (`prompt-N.txt`), says it started (`started-N`),
/// and in its first run waits for `go` before it exits; an auditor that asks for another
/// iteration once, then approves.
fn scripts(w: &World) -> (String, String) {
    let dir = w.tmp.path().display().to_string();
    let worker = w.script(
        "w.sh",
        &format!(
            "n=$(ls {dir} | grep -c '^prompt-'); n=$((n + 1)); cat > {dir}/prompt-$n.txt; \
             touch {dir}/started-$n; \
             if [ $n = 1 ]; then while [ ! -f {dir}/go ]; do sleep 0.05; done; fi; \
             echo worked $n"
        ),
    );
    let auditor = w.script(
        "a.sh",
        &format!(
            "if [ -f {dir}/audited ]; then echo 'VERDICT: DONE fine'; \
             else touch {dir}/audited; echo 'VERDICT: RETRY once more'; fi"
        ),
    );
    (worker, auditor)
}

/// Runs `c` with `input` on its stdin.
fn with_stdin(mut c: std::process::Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn say(w: &World, args: &[&str]) -> std::process::Output {
    w.cmd()
        .env("ONESHOT_ACTOR", "ann")
        .arg("say")
        .args(args)
        .output()
        .unwrap()
}

fn messages(w: &World, id: &str) -> Vec<(String, String)> {
    w.log(id)
        .into_iter()
        .filter(|r| r["type"] == "message")
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_string(),
                r["text"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_command_worker_gets_the_message_in_its_next_prompt() {
    let w = World::new();
    let (worker, auditor) = scripts(&w);
    let mut child = w.spawn(&worker, &auditor, &[], "write the parser");
    w.wait_for(&w.tmp.path().join("started-1"), Duration::from_secs(15));
    let id = w.session_id();

    let out = say(&w, &[&id[..8], "use the v2 API, not v1"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out)
            .contains("the running worker cannot take a message mid-run; its next prompt carries"),
        "{}",
        text(&out)
    );
    std::fs::write(w.tmp.path().join("go"), "").unwrap();
    let status = wait_timeout(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(0));

    let first = std::fs::read_to_string(w.tmp.path().join("prompt-1.txt")).unwrap();
    let second = std::fs::read_to_string(w.tmp.path().join("prompt-2.txt")).unwrap();
    assert!(!first.contains("v2 API"), "{first}");
    assert!(second.contains("ann: use the v2 API, not v1"), "{second}");
    assert_eq!(
        messages(&w, &id),
        [
            ("received".to_string(), "use the v2 API, not v1".to_string()),
            ("next_prompt".to_string(), String::new()),
            ("in_prompt".to_string(), String::new()),
        ]
    );
    let state = w.state(&id);
    assert_eq!(state["messages"][0]["status"], "in_prompt");
    assert_eq!(state["messages"][0]["taken_iteration"], 2);
    assert_eq!(
        std::fs::read_dir(w.session_dir(&id).join("inbox"))
            .unwrap()
            .count(),
        0,
        "the inbox is emptied once the session holds the message"
    );
    let log = w.cmd().args(["log", &id]).output().unwrap();
    let log = text(&log);
    assert!(log.contains("from ann: use the v2 API, not v1"), "{log}");
    assert!(log.contains("kept for the next worker prompt"), "{log}");
    // `show` puts it in the run it arrived during.
    let show = w
        .cmd()
        .args(["show", &id, "--iteration", "1"])
        .output()
        .unwrap();
    let show = text(&show);
    assert!(show.contains("from ann: use the v2 API, not v1"), "{show}");
}

#[test]
fn a_message_to_a_paused_session_waits_for_its_resume() {
    let w = World::new();
    let (worker, auditor) = scripts(&w);
    let mut child = w.spawn(&worker, &auditor, &[], "write the parser");
    w.wait_for(&w.tmp.path().join("started-1"), Duration::from_secs(15));
    let id = w.session_id();
    let out = w.cmd().args(["stop", &id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(15)).code(),
        Some(130)
    );

    // A secret-named variable's value is redacted, here as in every oneshot write.
    let mut c = w.cmd();
    c.env("DEPLOY_TOKEN", "zq8-very-secret-value")
        .args(["say", &id, "--file", "-"]);
    let out = with_stdin(
        c,
        b"the staging key is zq8-very-secret-value; the tests live in tests/\n",
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("nothing runs it now — its next worker prompt carries the message"),
        "{}",
        text(&out)
    );
    let inbox = w.session_dir(&id).join("inbox");
    let posted: Vec<_> = std::fs::read_dir(&inbox).unwrap().flatten().collect();
    assert_eq!(posted.len(), 1);
    let file = std::fs::read_to_string(posted[0].path()).unwrap();
    assert!(!file.contains("zq8-very-secret-value"), "{file}");
    assert!(file.contains("the tests live in tests/"), "{file}");

    std::fs::write(w.tmp.path().join("go"), "").unwrap();
    let out = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    // The paused iteration runs again, with the message in its prompt.
    let again = std::fs::read_to_string(w.tmp.path().join("prompt-2.txt")).unwrap();
    assert!(again.contains("the tests live in tests/"), "{again}");
    assert!(!again.contains("zq8-very-secret-value"), "{again}");
    let all = std::fs::read_to_string(w.session_dir(&id).join("oneshot-log.json")).unwrap();
    assert!(!all.contains("zq8-very-secret-value"));
}

#[test]
fn nothing_to_say_or_nobody_to_hear_it_is_a_clear_error() {
    let w = World::new();
    let (worker, auditor) = scripts(&w);
    std::fs::write(w.tmp.path().join("go"), "").unwrap();
    let out = w
        .cmd()
        .args([
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            &auditor,
            "write it",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();

    let out = say(&w, &[&id]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("what should the worker be told?"),
        "{}",
        text(&out)
    );

    let out = say(&w, &[&id, "   "]);
    assert_ne!(code(&out), 0);
    assert!(
        text(&out).contains("the message is empty"),
        "{}",
        text(&out)
    );

    let out = say(&w, &[&id, "one more thing"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "say to session {id}: it has ended (COMPLETED); no worker will run again"
        )),
        "{}",
        text(&out)
    );
    assert!(!w.session_dir(&id).join("inbox").join("x").exists());

    let out = say(&w, &["nosuchsession", "hello"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("find session `nosuchsession`"),
        "{}",
        text(&out)
    );
}
