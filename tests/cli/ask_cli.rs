//! `oneshot ask` through the real binary with command targets (the real agent CLIs:
//! tests/agents/ask.rs): the answer printed when it fits, asked again with its violations when
//! it does not, refused after the runs are spent; the exit codes.

use crate::common;
use common::*;

const DONE: &str = r#"{"verdict": "done", "reason": "ok", "confidence": 1, "open_criteria": []}"#;

fn ask(w: &World, args: &[&str]) -> std::process::Output {
    w.cmd().arg("ask").args(args).output().unwrap()
}

#[test]
fn an_answer_that_fits_is_printed_as_one_json_line() {
    let w = World::new();
    // Prose around a fenced block: the object is found and checked.
    let target = w.script(
        "t.sh",
        &format!("cat > /dev/null; printf 'Here it is:\\n```json\\n%s\\n```\\n' '{DONE}'"),
    );
    let out = ask(
        &w,
        &[
            "--target-cmd",
            &target,
            "--schema",
            "verdict",
            "is it done?",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["verdict"], "done");
}

#[test]
fn an_answer_that_does_not_fit_is_asked_again_with_what_was_wrong() {
    let w = World::new();
    // Run 1 answers with a verdict the schema does not know; run 2 answers right. Each run's
    // prompt is kept, in a directory made beforehand: the target is confined, and the test's
    // directory (it holds oneshot's state) takes no new entries from it.
    let prompts = w.tmp.path().join("prompts");
    std::fs::create_dir(&prompts).unwrap();
    let target = w.script(
        "t.sh",
        &format!(
            "n=$(ls {dir} | grep -c '^prompt') ; cat > {dir}/prompt$n; \
             if [ $n = 0 ]; then echo '{{\"verdict\": \"maybe\", \"reason\": \"?\", \"confidence\": 1, \"open_criteria\": []}}'; \
             else echo '{DONE}'; fi",
            dir = prompts.display()
        ),
    );
    let out = ask(
        &w,
        &[
            "--target-cmd",
            &target,
            "--schema",
            "verdict",
            "is it done?",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(text(&out).contains("fit on run 2"), "{}", text(&out));
    let second = std::fs::read_to_string(prompts.join("prompt1")).unwrap();
    assert!(second.contains("did not fit the schema"), "{second}");
    assert!(second.contains("/verdict"), "{second}");
    let first = std::fs::read_to_string(prompts.join("prompt0")).unwrap();
    assert!(
        first.contains("\"open_criteria\""),
        "the schema is in the prompt: {first}"
    );
    assert_eq!(first.matches("is it done?").count(), 1);
}

#[test]
fn an_answer_that_never_fits_is_refused_with_exit_1() {
    let w = World::new();
    let target = w.script("t.sh", "cat > /dev/null; echo '{\"verdict\": \"maybe\"}'");
    let out = ask(
        &w,
        &[
            "--target-cmd",
            &target,
            "--schema",
            "verdict",
            "--attempts",
            "2",
            "q",
        ],
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no answer fit the schema in 2 run(s)"),
        "{err}"
    );
    assert!(err.contains("/verdict"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_questions_exit_2_and_slow_or_failing_targets_exit_1() {
    let w = World::new();
    let out = ask(
        &w,
        &["--target-cmd", "true", "--schema", "no-such-label", "q"],
    );
    assert_eq!(code(&out), 2, "{}", text(&out));
    let out = ask(&w, &["--schema", "verdict", "q"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("--target"), "{}", text(&out));
    let out = ask(
        &w,
        &[
            "--target-cmd",
            "no-such-program-zq",
            "--schema",
            "verdict",
            "q",
        ],
    );
    assert_eq!(code(&out), 2, "{}", text(&out));

    let marker = format!("sleep 61.{}", std::process::id());
    let slow = w.script("slow.sh", &marker);
    let started = std::time::Instant::now();
    let out = ask(
        &w,
        &[
            "--target-cmd",
            &slow,
            "--schema",
            "verdict",
            "--timeout",
            "1s",
            "q",
        ],
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(
        text(&out).contains("did not answer within 1s"),
        "{}",
        text(&out)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    let ps = std::process::Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&ps.stdout)
    );

    let failing = w.script("f.sh", "echo 'the key is bad' >&2; exit 3");
    let out = ask(&w, &["--target-cmd", &failing, "--schema", "verdict", "q"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(
        text(&out).contains("exited with code 3 without an answer: the key is bad"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_prompt_can_come_from_stdin_and_schemas_from_files() {
    let w = World::new();
    let schema = w.file(
        "s.json",
        r#"{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}"#,
    );
    let target = w.script("t.sh", "grep -q 'forty-two' && echo '{\"n\": 42}'");
    let mut child = w
        .cmd()
        .args(["ask", "--target-cmd", &target, "--schema"])
        .arg(&schema)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"say forty-two")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), r#"{"n":42}"#);
}

/// A `[targets.NAME]` of oneshot.toml: its command, and its environment with a secret read
/// from oneshot's own (`$VAR`), never written in the file; a missing secret or a mistake in the
/// table is a usage error naming the file and line.
#[test]
fn named_targets_come_from_oneshot_toml_with_their_secrets() {
    let w = World::new();
    let schema = w.file(
        "n.json",
        r#"{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}"#,
    );
    let script = w.file("n.sh", "cat > /dev/null; echo \"{\\\"n\\\": $ANSWER_N}\"");
    std::fs::write(
        w.work().join("oneshot.toml"),
        format!(
            "max-iterations = 3\n\n[targets.counter]\ncmd = \"sh {}\"\nenv = {{ ANSWER_N = \"$ZQ_SECRET_N\" }}\n",
            script.display()
        ),
    )
    .unwrap();
    let run = |secret: Option<&str>| {
        let mut c = w.cmd();
        c.args(["ask", "--target", "counter", "--schema"])
            .arg(&schema)
            .arg("q");
        if let Some(s) = secret {
            c.env("ZQ_SECRET_N", s);
        }
        c.output().unwrap()
    };
    let out = run(Some("7"));
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), r#"{"n":7}"#);
    let out = run(None);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("oneshot.toml:3"), "{}", text(&out));
    assert!(
        text(&out).contains("$ZQ_SECRET_N, which is not set"),
        "{}",
        text(&out)
    );

    std::fs::write(
        w.work().join("oneshot.toml"),
        "[targets.fast]\nagent = \"claude:haiku\"\nmodle = \"x\"\n",
    )
    .unwrap();
    let out = run(Some("7"));
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("oneshot.toml:3"), "{}", text(&out));
    assert!(
        text(&out).contains("unknown key targets.fast.modle"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_policy_that_does_not_load_is_refused_before_anything_runs() {
    let w = World::new();
    let marker = w.tmp.path().join("ran");
    std::fs::create_dir(&marker).unwrap();
    let target = w.script(
        "t.sh",
        &format!("touch {}/yes; echo '{DONE}'", marker.display()),
    );
    let policy = w.tmp.path().join("broken.lua");
    std::fs::write(&policy, "return { permit = 42 }").unwrap();
    let p = policy.to_str().unwrap();
    let out = ask(
        &w,
        &[
            "--target-cmd",
            &target,
            "--policy",
            p,
            "--schema",
            "verdict",
            "q",
        ],
    );
    assert_eq!(code(&out), 2, "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--policy") && err.contains("broken.lua"),
        "{err}"
    );
    assert!(err.contains("permit"), "says what is wrong: {err}");
    assert!(!marker.join("yes").exists(), "the target never ran");
    // A policy that loads leaves a command target's answer as it is (commands ask for no
    // tools).
    std::fs::write(
        &policy,
        "return { permit = function() return \"deny\", \"no\" end }",
    )
    .unwrap();
    let out = ask(
        &w,
        &[
            "--target-cmd",
            &target,
            "--policy",
            p,
            "--schema",
            "verdict",
            "q",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(marker.join("yes").exists());
}
