//! Cline 3.0.65: `cline --json …` against the fake OpenAI Chat Completions API, through its
//! `openai-compatible` provider configured in a private data dir (`--data-dir DIR`, the file
//! `DIR/settings/providers.json` that `cline auth` writes); then whole oneshot sessions with
//! Cline as worker and as auditor.

use super::harness::{Run, Sandbox, find, run};
use super::with_oneshot::{last_reason, oneshot, role_args, state};
use crate::fake_model::{Api, FakeModel, Reply};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

/// The model name given to the provider; the fake server answers whatever is asked.
const MODEL: &str = "fake-model";

/// Cline's data dir in the sandbox.
pub fn data_dir(sb: &Sandbox) -> PathBuf {
    sb.tmp.path().join("cline-data")
}

/// `cline` with an `openai-compatible` provider pointed at `model`, written where `cline auth
/// -p openai-compatible -k KEY -m MODEL -b URL --data-dir DIR` writes it (Cline refuses the
/// entry without `updatedAt`). `None` when Cline is not installed.
pub fn command(sb: &Sandbox, model: &FakeModel) -> Option<Command> {
    let bin = find("cline")?;
    let settings = json!({
        "version": 1,
        "lastUsedProvider": "openai-compatible",
        "modes": {},
        "providers": {"openai-compatible": {
            "settings": {"provider": "openai-compatible", "apiKey": "fake-key",
                         "model": MODEL, "baseUrl": format!("{}/v1", model.url())},
            "updatedAt": "2026-01-01T00:00:00.000Z",
            "tokenSource": "manual"
        }}
    });
    let file = data_dir(sb).join("settings/providers.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, settings.to_string()).unwrap();
    let mut c = sb.command(&bin);
    // Cline's base URL (the fake server on this machine's loopback) is in its settings file,
    // which oneshot does not read: a session of it runs with the network open.
    c.env("CLINE_NO_AUTO_UPDATE", "1")
        .env("ONESHOT_NETWORK", "open");
    Some(c)
}

/// Runs `cline --json --data-dir DIR EXTRA… -- PROMPT` in the sandbox.
fn cline(sb: &Sandbox, model: &FakeModel, prompt: &str, extra: &[&str]) -> Option<Run> {
    let mut c = command(sb, model)?;
    c.arg("--json")
        .arg(format!("--data-dir={}", data_dir(sb).display()))
        .args(extra)
        .args(["--", prompt]);
    Some(run(c, LIMIT))
}

/// The `event` objects of the `agent_event` lines of type `ty`.
fn agent_events(r: &Run, ty: &str) -> Vec<Value> {
    r.of_type("agent_event")
        .into_iter()
        .map(|e| e["event"].clone())
        .filter(|e| e["type"] == ty)
        .collect()
}

#[test]
fn cline_text_answer() {
    let model = FakeModel::with([Reply::Text("Hello from the fake model.".into())]);
    let sb = Sandbox::new();
    let Some(r) = cline(&sb, &model, "say hello zq3", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let result = r.last("run_result");
    assert_eq!(result["finishReason"], "completed");
    assert_eq!(result["text"], "Hello from the fake model.");
    assert_eq!(result["usage"]["inputTokens"], 100);
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 1, "{:#?}", model.requests());
    assert_eq!(reqs[0].api, Api::Chat);
    assert_eq!(reqs[0].body["model"], MODEL);
    assert_eq!(reqs[0].count("zq3"), 1, "the prompt reaches the model once");
    // No other request left the machine: no telemetry or update check reached the server.
    assert_eq!(model.requests().len(), 1, "{:#?}", model.requests());
}

/// As worker: a shell command and a file edit run without asking (auto-approve is the default).
#[test]
fn cline_runs_commands_and_edits_files() {
    let sb = Sandbox::new();
    let path = sb.work().join("edited.txt");
    let model = FakeModel::with([
        Reply::Bash("echo hi from cline > made.txt && cat made.txt".into()),
        Reply::Write {
            path: path.display().to_string(),
            content: "edited by cline\n".into(),
        },
        Reply::Text("done".into()),
    ]);
    let Some(r) = cline(&sb, &model, "make the files", &["--auto-approve", "true"]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let made = std::fs::read_to_string(sb.work().join("made.txt")).unwrap();
    assert_eq!(made, "hi from cline\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "edited by cline\n");
    let ends: Vec<Value> = agent_events(&r, "content_end")
        .into_iter()
        .filter(|e| e["contentType"] == "tool")
        .collect();
    assert_eq!(ends.len(), 2, "{}", r.dump());
    assert_eq!(ends[0]["toolName"], "run_commands");
    assert_eq!(ends[0]["output"][0]["result"], "hi from cline\n");
    assert_eq!(ends[1]["toolName"], "editor");
    assert!(
        model.model_requests()[1]
            .body_text()
            .contains("hi from cline")
    );
}

/// As auditor: plan mode offers no editor and refuses a command that writes a file.
#[test]
fn cline_plan_mode_changes_nothing() {
    let sb = Sandbox::new();
    let model = FakeModel::with([
        Reply::Bash("echo x > planned.txt".into()),
        Reply::Text("looks fine".into()),
    ]);
    let Some(r) = cline(&sb, &model, "review this", &["--plan"]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(!sb.work().join("planned.txt").exists());
    let tools = model.model_requests()[0].tool_names();
    assert!(tools.iter().any(|t| t == "run_commands"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "editor"), "{tools:?}");
    let end = agent_events(&r, "content_end")
        .into_iter()
        .find(|e| e["contentType"] == "tool")
        .expect("the refused command's result");
    assert!(
        end["output"]["error"]
            .as_str()
            .unwrap()
            .contains("plan mode"),
        "{end}"
    );
}

#[test]
fn cline_401_fails_fast_with_an_auth_error() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(401));
    let sb = Sandbox::new();
    let Some(r) = cline(&sb, &model, "hello there", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(r.elapsed < Duration::from_secs(30), "{:?}", r.elapsed);
    let error = agent_events(&r, "error").pop().expect("an error event");
    assert_eq!(error["errorClass"], "auth", "{error}");
    assert_eq!(error["recoverable"], false);
    assert_eq!(r.last("run_result")["finishReason"], "error");
    assert_eq!(model.model_requests().len(), 1, "not retried");
}

/// What oneshot's launch works around, checked against the CLI so a release that changes it
/// shows up here: `--json` refuses a prompt word without whitespace (a trailing newline is
/// enough, and trimmed), and `--id` (resume) switches to interactive mode, which `--json`
/// refuses — Cline cannot continue a session headless.
#[test]
fn cline_prompt_rules_and_no_headless_resume() {
    let model = FakeModel::with([Reply::Text("ok".into())]);
    let sb = Sandbox::new();
    let Some(r) = cline(&sb, &model, "review", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(r.stderr.contains("unquoted prompt"), "{}", r.dump());
    let r = cline(&sb, &model, "review\n", &[]).unwrap();
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let user = &model.model_requests()[0].body["messages"][1]["content"];
    assert_eq!(user.to_string().matches("review").count(), 1, "{user}");
    assert!(!user.to_string().contains("review\\n"), "{user}");

    // A refusal before the run starts is a JSON line on stderr, not stdout.
    let r = cline(
        &sb,
        &model,
        "go on please",
        &["--id", "1795466019171_kbhtt"],
    )
    .unwrap();
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(r.stdout.is_empty(), "{}", r.dump());
    let e: Value = serde_json::from_str(r.stderr.lines().last().unwrap()).unwrap();
    assert_eq!(e["type"], "error");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("interactive mode is unsupported"), "{e}");
}

/// `--worker cline`: Cline writes the file through its editor tool, the command auditor
/// accepts; the prompt reached the model once.
#[test]
fn cline_worker_edits_a_file_in_a_session() {
    let sb = Sandbox::new();
    let file = sb.work().join("notes.txt");
    let model = FakeModel::with([
        Reply::Write {
            path: file.display().to_string(),
            content: "from cline\n".into(),
        },
        Reply::Text("wrote notes.txt zq61".into()),
    ]);
    let Some(cline) = command(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&cline]);
    c.args(["--worker", &format!("cline:{MODEL}")])
        .args(role_args(
            "worker",
            &[format!("--data-dir={}", data_dir(&sb).display())],
        ))
        .args(["--auditor-cmd", "echo VERDICT: done", "write notes.txt"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "from cline\n");
    let s = state(&sb);
    assert_eq!(s["state"], "COMPLETED", "{s:#}");
    assert_eq!(s["agents"]["worker"]["kind"], "cline");
    let reqs = model.model_requests();
    assert_eq!(reqs[0].count("write notes.txt"), 1, "prompt sent once");
    assert!(reqs[0].tool_names().iter().any(|t| t == "editor"));
}

/// `--auditor cline`: plan mode, the verdict read from its JSON answer.
#[test]
fn cline_auditor_gives_a_verdict() {
    let sb = Sandbox::new();
    let model = FakeModel::with([Reply::Text(
        r#"{"verdict":"done","reason":"fine zq62","confidence":1,"open_criteria":[]}"#.into(),
    )]);
    let Some(cline) = command(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&cline]);
    c.args([
        "--worker-cmd",
        "sh -c 'echo work > w.txt'",
        "--auditor",
        "cline",
    ])
    .args(role_args(
        "auditor",
        &[format!("--data-dir={}", data_dir(&sb).display())],
    ))
    .arg("work");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let s = state(&sb);
    assert_eq!(s["state"], "COMPLETED", "{s:#}");
    assert_eq!(s["iteration_count"], 1);
    let tools = model.model_requests()[0].tool_names();
    assert!(!tools.iter().any(|t| t == "editor"), "plan mode: {tools:?}");
}

/// A refused key ends the session at once, naming Cline and how to configure it.
#[test]
fn cline_401_fails_the_session_and_names_cline() {
    let sb = Sandbox::new();
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(401));
    let Some(cline) = command(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&cline]);
    c.args(["--worker", "cline"])
        .args(role_args(
            "worker",
            &[format!("--data-dir={}", data_dir(&sb).display())],
        ))
        .args(["--auditor-cmd", "true", "do it"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let s = state(&sb);
    assert_eq!(s["state"], "FAILED", "{s:#}");
    let last = last_reason(&s);
    assert_eq!(last["kind"], "agent_failed", "{last:#}");
    assert_eq!(last["agent"], "cline");
    assert_eq!(last["error"], "auth");
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(out.contains("cline auth"), "{}", r.dump());
    assert_eq!(s["iteration_count"], 1, "not retried");
}

/// Cline ignores SIGTERM while a model call hangs; oneshot's inactivity timeout still ends the
/// session promptly, because the stop escalates to SIGKILL of the whole group, and no Cline
/// process is left behind.
#[test]
fn a_hung_cline_is_stopped_and_leaves_nothing_running() {
    let sb = Sandbox::new();
    let model = FakeModel::with([Reply::Hang]);
    let Some(cline) = command(&sb, &model) else {
        return;
    };
    let dir = format!("--data-dir={}", data_dir(&sb).display());
    let mut c = oneshot(&sb, &[&cline]);
    c.args(["--worker", "cline"])
        .args(role_args("worker", std::slice::from_ref(&dir)))
        .args(["--auditor-cmd", "true", "--inactivity-timeout", "3s"])
        .args(["--max-iterations", "1", "wait here"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(r.elapsed < Duration::from_secs(40), "{:?}", r.elapsed);
    let reasons = state(&sb)["history"].to_string();
    assert!(reasons.contains("inactivity_timeout"), "{reasons}");
    // Every process whose command line names this test's data dir.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&dir))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
