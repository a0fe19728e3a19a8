//! What a person reads of a run with real agents: the terminal and `oneshot log` show each
//! agent's account — what it said, each tool with its input and outcome — one line per event,
//! not its protocol's JSON (`--raw` shows that); `oneshot show` gives each iteration's prompt,
//! account, verdict and cost; `status`, `list` and the run's last line say what was spent.

use super::harness::{Sandbox, run};
use super::with_oneshot::{LIMIT, codex_overrides, oneshot, role_args, state};
use crate::fake_model::{FakeModel, Reply};
use std::process::Command;

/// A Claude worker writes a file and runs a command; a Codex auditor rejects once, then
/// accepts. Returns the sandbox, the run's stdout and stderr, and the agents' commands.
fn two_iterations() -> Option<(Sandbox, String, String, Vec<Command>)> {
    let sb = Sandbox::new();
    let file = sb.work().join("notes.txt");
    let claude_model = FakeModel::with([
        Reply::Write {
            path: file.display().to_string(),
            content: "line one\n".into(),
        },
        Reply::Text("I wrote line one zq81.".into()),
        Reply::Bash("echo line two >> notes.txt".into()),
        Reply::Text("Added line two.".into()),
    ]);
    let codex_model = FakeModel::with([
        Reply::Text(
            r#"{"verdict":"retry","reason":"add a second line zq82","confidence":0.9,"open_criteria":["line two"]}"#
                .into(),
        ),
        Reply::Text(
            r#"{"verdict":"done","reason":"both lines","confidence":0.8,"open_criteria":[]}"#
                .into(),
        ),
    ]);
    let claude = super::claude::claude(&sb, &claude_model)?;
    let codex = super::codex::codex(&sb, &codex_model)?;
    let mut c = oneshot(&sb, &[&claude, &codex]);
    c.args(["--worker", "claude", "--auditor", "codex:gpt-5.5"])
        .args(role_args("auditor", &codex_overrides(&codex)))
        .arg("write notes.txt with two lines");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(state(&sb)["state"], "COMPLETED");
    let (out, err) = (r.stdout.clone(), r.stderr.clone());
    Some((sb, out, err, vec![claude, codex]))
}

/// `oneshot ARGS` in the sandbox, its stdout.
fn oneshot_out(sb: &Sandbox, agents: &[Command], args: &[&str]) -> String {
    let refs: Vec<&Command> = agents.iter().collect();
    let out = oneshot(sb, &refs).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_run_reads_as_an_account_not_json() {
    let Some((sb, out, err, agents)) = two_iterations() else {
        return;
    };
    // The terminal: one line an event, no protocol JSON, each within the width (80 off a
    // terminal), the cost on the last line.
    for want in [
        "[worker] $ Write ",
        "[worker]   → ok: File created",
        "[worker] I wrote line one zq81.",
        "[worker] $ Bash echo line two >> notes.txt",
        "[worker] Added line two.",
    ] {
        assert!(out.contains(want), "{want:?} in\n{out}");
    }
    assert!(
        !out.contains("\"type\""),
        "protocol JSON on the terminal:\n{out}"
    );
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    assert!(out.len() < 2_000, "{} bytes:\n{out}", out.len());
    let last = err.lines().last().unwrap();
    assert!(last.contains("6 turns, 720 tokens, $0.0040"), "{last}");

    // `oneshot log`: the same account with times and iterations; `--raw` the protocol.
    let log = oneshot_out(&sb, &agents, &["log"]);
    assert!(log.contains("[worker#1] $ Write "), "{log}");
    assert!(log.contains("[worker#2] Added line two."), "{log}");
    assert!(
        log.contains("?? verdict (built-in) -> RETRY: add a second line zq82"),
        "{log}"
    );
    assert!(!log.contains("{\"type\""), "{log}");
    let raw = oneshot_out(&sb, &agents, &["log", "--raw"]);
    assert!(
        raw.lines()
            .any(|l| l.contains("[worker#1] {") && l.contains("\"subtype\":\"init\"")),
        "{raw}"
    );
    assert!(
        raw.len() > 5 * log.len() / 2,
        "raw {} vs {}",
        raw.len(),
        log.len()
    );

    // What was spent: status, a list column.
    let status = oneshot_out(&sb, &agents, &["status"]);
    assert!(
        status.contains("spent     6 turns, 720 tokens, $0.0040"),
        "{status}"
    );
    let list = oneshot_out(&sb, &agents, &["list"]);
    assert!(list.lines().next().unwrap().contains("SPENT"), "{list}");
    assert!(list.contains("$0.0040"), "{list}");

    // `oneshot show`: each iteration's prompt, account, changes, verdict and cost.
    let show = oneshot_out(&sb, &agents, &["show"]);
    let second = show.find("iteration 2").expect("two iterations");
    let (one, two) = show.split_at(second);
    assert!(one.contains("  worker   claude, "), "{show}");
    assert!(
        one.contains("2 turns, 240 tokens, $0.0020, exit 0"),
        "{show}"
    );
    assert!(
        one.contains("    prompt write notes.txt with two lines"),
        "{show}"
    );
    assert!(
        one.contains("    [worker] I wrote line one zq81."),
        "{show}"
    );
    assert!(one.contains("  changed  notes.txt"), "{show}");
    assert!(one.contains("  auditor  codex, "), "{show}");
    assert!(
        one.contains("  verdict  RETRY: add a second line zq82 (confidence 0.9)"),
        "{show}"
    );
    assert!(two.contains("CRITIQUE: add a second line zq82"), "{show}");
    assert!(two.contains("  verdict  DONE: both lines"), "{show}");
    let json: serde_json::Value =
        serde_json::from_str(&oneshot_out(&sb, &agents, &["show", "-i", "2", "--json"])).unwrap();
    let its = json["iterations"].as_array().unwrap();
    assert_eq!(its.len(), 1);
    assert_eq!(its[0]["number"], 2);
    assert_eq!(its[0]["verdict"]["verdict"], "done");
    assert_eq!(its[0]["worker"][0]["lines"][0]["name"], "Bash");
    assert_eq!(json["spent"]["turns"], 6);
    let refs: Vec<&Command> = agents.iter().collect();
    let three = oneshot(&sb, &refs)
        .args(["show", "--iteration", "3"])
        .output()
        .unwrap();
    assert_eq!(three.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&three.stderr).contains("it has 2 iterations — ask for 1 to 2"),
        "{three:?}"
    );
}

/// `--raw` shows the protocol lines as the agent printed them, on the terminal too.
#[test]
fn raw_shows_the_protocol() {
    let sb = Sandbox::new();
    let model = FakeModel::with([Reply::Text("hello zq83".into())]);
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&claude]);
    c.args([
        "--worker",
        "claude",
        "--auditor-cmd",
        "echo VERDICT: done",
        "--raw",
        "hi",
    ]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(
        r.stdout.contains("[worker] {\"type\":\"system\""),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("hello zq83"), "{}", r.dump());
}

/// The issue's own case: a two-iteration Gemini worker (ACP) judged by a Codex auditor printed
/// 19 KB of protocol JSON and Gemini's stack traces. Now: its account, a few lines of each
/// burst of its stderr, every line within the width.
#[test]
fn a_gemini_worker_and_a_codex_auditor_read_as_accounts() {
    let sb = Sandbox::new();
    let gemini_model = FakeModel::with([
        Reply::Bash("echo one > notes.txt".into()),
        Reply::Text("wrote line one zq84".into()),
        Reply::Bash("echo two >> notes.txt".into()),
        Reply::Text("added line two".into()),
    ]);
    let codex_model = FakeModel::with([
        Reply::Text(
            r#"{"verdict":"retry","reason":"add line two zq85","confidence":0.9,"open_criteria":["two"]}"#
                .into(),
        ),
        Reply::Text(
            r#"{"verdict":"done","reason":"both","confidence":0.9,"open_criteria":[]}"#.into(),
        ),
    ]);
    let (Some(gemini), Some(codex)) = (
        super::gemini::command(&sb, &gemini_model),
        super::codex::codex(&sb, &codex_model),
    ) else {
        return;
    };
    let mut c = oneshot(&sb, &[&gemini, &codex]);
    c.args(["--worker", &format!("gemini:{}", super::gemini::MODEL)])
        .args(["--auditor", "codex:gpt-5.5"])
        .args(role_args("auditor", &codex_overrides(&codex)))
        .arg("write notes.txt with two lines");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let out = &r.stdout;
    assert!(out.contains("[worker] $ "), "{out}");
    assert!(out.contains("echo one > notes.txt"), "{out}");
    assert!(out.contains("[worker] wrote line one zq84"), "{out}");
    assert!(
        !out.contains("\"jsonrpc\""),
        "protocol JSON on the terminal:\n{out}"
    );
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    // A burst of stderr shows at most three lines, then how many more there were.
    let mut run_of_raw = 0;
    for line in out.lines() {
        let entry = line.starts_with("[worker] $ ")
            || line.starts_with("[worker]   → ")
            || line.starts_with("[auditor]");
        if line.contains("more line") {
            run_of_raw = 0;
        } else if !entry && !line.contains("zq84") && !line.contains("line two") {
            run_of_raw += 1;
            assert!(run_of_raw <= 3, "an unbounded burst of stderr:\n{out}");
        } else {
            run_of_raw = 0;
        }
    }
    assert!(out.len() < 3_000, "{} bytes:\n{out}", out.len());
}
