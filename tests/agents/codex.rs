//! Codex 0.169.0: `codex exec --json` against the fake OpenAI Responses API, through a custom
//! provider (the built-in provider ignores `OPENAI_BASE_URL`).

use super::harness::{Run, Sandbox, find, run, try_run};
use crate::fake_model::{Api, FakeModel, Reply};
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// `codex` with a private CODEX_HOME and the fake provider configured (one retry, so failures
/// are quick).
pub fn codex(sb: &Sandbox, model: &FakeModel) -> Option<Command> {
    let bin = find("codex")?;
    let mut c = sb.command(&bin);
    c.env("CODEX_HOME", sb.home().join(".codex"))
        .env("FAKE_API_KEY", "fake-key");
    std::fs::create_dir_all(sb.home().join(".codex")).unwrap();
    for kv in [
        "model_provider=\"fake\"".to_string(),
        "model_providers.fake.name=\"fake\"".into(),
        format!("model_providers.fake.base_url=\"{}/v1\"", model.url()),
        "model_providers.fake.env_key=\"FAKE_API_KEY\"".into(),
        "model_providers.fake.wire_api=\"responses\"".into(),
        // Its workspace-write sandbox makes every writable root's `.git`, `.codex` and
        // `.agents` read-only by creating them: /tmp (a writable root by default) would get an
        // empty `.git` that makes every later test under /tmp look inside a repository.
        "sandbox_workspace_write.exclude_slash_tmp=true".into(),
        "model_providers.fake.request_max_retries=1".into(),
        "model_providers.fake.stream_max_retries=1".into(),
    ] {
        c.arg("-c").arg(kv);
    }
    Some(c)
}

/// `codex exec --json … PROMPT` in the sandbox's workdir, writable.
fn exec(sb: &Sandbox, model: &FakeModel, prompt: &str) -> Option<Run> {
    let mut c = codex(sb, model)?;
    c.args([
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
    ])
    .args(["-m", "gpt-5.5", prompt]);
    Some(run(c, LIMIT))
}

/// The `item` of every `item.completed` event of this item type.
fn items(r: &Run, ty: &str) -> Vec<serde_json::Value> {
    r.of_type("item.completed")
        .into_iter()
        .map(|e| e["item"].clone())
        .filter(|i| i["type"] == ty)
        .collect()
}

#[test]
fn codex_text_answer() {
    let model = FakeModel::with([Reply::Text("Hello from the fake model.".into())]);
    let sb = Sandbox::new();
    let Some(r) = exec(&sb, &model, "say hello zq2") else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(r.last("thread.started")["thread_id"].is_string());
    let msgs = items(&r, "agent_message");
    assert_eq!(
        msgs.last().unwrap()["text"],
        "Hello from the fake model.",
        "{}",
        r.dump()
    );
    assert!(r.last("turn.completed")["usage"]["input_tokens"].is_number());
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 1, "{:#?}", model.requests());
    assert_eq!(reqs[0].api, Api::Responses);
    assert_eq!(reqs[0].path, "/v1/responses");
    assert_eq!(reqs[0].header("authorization"), Some("<redacted>"));
    assert_eq!(reqs[0].count("zq2"), 1, "the prompt reaches the model once");
}

#[test]
fn codex_shell_tool_result_reaches_the_model() {
    let model = FakeModel::with([
        Reply::Bash("echo hi from codex > made_by_codex.txt && cat made_by_codex.txt".into()),
        Reply::Text("done".into()),
    ]);
    let sb = Sandbox::new();
    let Some(r) = exec(&sb, &model, "run it") else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(
        std::fs::read_to_string(sb.work().join("made_by_codex.txt")).unwrap(),
        "hi from codex\n"
    );
    let cmds = items(&r, "command_execution");
    assert_eq!(cmds.len(), 1, "{}", r.dump());
    assert_eq!(cmds[0]["exit_code"], 0);
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[0].tool_names().contains(&"exec_command".to_string()),
        "{:?}",
        reqs[0].tool_names()
    );
    let second = reqs[1].body_text();
    assert!(
        second.contains("function_call_output") && second.contains("hi from codex"),
        "{second}"
    );
}

#[test]
fn codex_write_through_the_shell_creates_the_file() {
    let model = FakeModel::with([
        Reply::Write {
            path: "notes.txt".into(),
            content: "line one".into(),
        },
        Reply::Text("written".into()),
    ]);
    let sb = Sandbox::new();
    let Some(r) = exec(&sb, &model, "write it") else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(
        std::fs::read_to_string(sb.work().join("notes.txt")).unwrap(),
        "line one\n"
    );
}

#[test]
fn codex_401_fails_fast() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(401));
    let sb = Sandbox::new();
    let Some(r) = exec(&sb, &model, "hello") else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let failed = r.last("turn.failed");
    assert!(
        failed["error"]["message"].as_str().unwrap().contains("401"),
        "{failed}"
    );
    assert!(r.elapsed < Duration::from_secs(20), "{:?}", r.elapsed);
}

#[test]
fn codex_500_exits_1() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(500));
    let sb = Sandbox::new();
    let Some(r) = exec(&sb, &model, "hello") else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(r.last("turn.failed")["error"]["message"].is_string());
}

#[test]
fn codex_stream_cut_exits_1() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Cut("partial ans".into()));
    let sb = Sandbox::new();
    let Some(r) = exec(&sb, &model, "hello") else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(!r.of_type("turn.failed").is_empty(), "{}", r.dump());
}

#[test]
fn codex_resume_continues_the_thread_and_keeps_a_rollout() {
    let model = FakeModel::with([
        Reply::Text("first answer".into()),
        Reply::Text("second answer".into()),
    ]);
    let sb = Sandbox::new();
    let Some(r) = exec(&sb, &model, "first zq12") else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let tid = r.last("thread.started")["thread_id"]
        .as_str()
        .unwrap()
        .to_string();
    let rollouts: Vec<_> = walk(&sb.home().join(".codex/sessions"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(&format!("{tid}.jsonl")))
        .collect();
    assert_eq!(
        rollouts.len(),
        1,
        "$CODEX_HOME/sessions/Y/M/D/rollout-…-<thread_id>.jsonl"
    );
    let Some(mut c) = codex(&sb, &model) else {
        return;
    };
    c.args([
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
    ])
    .args(["-m", "gpt-5.5", "resume", &tid, "second zq13"]);
    let r2 = run(c, LIMIT);
    assert_eq!(r2.code(), Some(0), "{}", r2.dump());
    assert_eq!(r2.last("thread.started")["thread_id"], tid.as_str());
    let second = &model.model_requests()[1];
    assert!(
        second.body_text().contains("first answer"),
        "the history is sent on resume"
    );
    assert_eq!(second.count("zq13"), 1);
}

/// A server that accepts the request and never answers: Codex waits forever (its
/// `stream_idle_timeout_ms` only counts once a response has started), so the orchestrator's own
/// limits must stop it. This test fails the day Codex gives up by itself.
#[test]
fn codex_never_gives_up_on_a_hung_server() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Hang);
    let sb = Sandbox::new();
    let Some(mut c) = codex(&sb, &model) else {
        return;
    };
    c.args(["-c", "model_providers.fake.stream_idle_timeout_ms=1000"])
        .args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-m",
            "gpt-5.5",
            "hello",
        ]);
    let r = try_run(c, Duration::from_secs(6)).expect_err("codex exited on its own");
    assert_eq!(model.model_requests().len(), 1, "{}", r.dump());
    assert!(!r.of_type("turn.started").is_empty(), "{}", r.dump());
    assert!(r.of_type("turn.failed").is_empty(), "{}", r.dump());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p))
        } else {
            out.push(p)
        }
    }
    out
}

/// `--output-schema` is sent to the model but the answer is not validated: a reply that breaks
/// the schema still exits 0, so oneshot must validate it itself.
#[test]
fn codex_output_schema_is_not_validated() {
    let model = FakeModel::with([Reply::Json(serde_json::json!({"unexpected": 1}))]);
    let sb = Sandbox::new();
    let schema = sb.tmp.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}"#,
    )
    .unwrap();
    let Some(mut c) = codex(&sb, &model) else {
        return;
    };
    c.args([
        "exec",
        "--json",
        "--skip-git-repo-check",
        "-m",
        "gpt-5.5",
        "--output-schema",
    ])
    .arg(&schema)
    .arg("judge");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(
        items(&r, "agent_message").last().unwrap()["text"],
        r#"{"unexpected":1}"#
    );
    assert!(
        model.model_requests()[0]
            .body_text()
            .contains("additionalProperties"),
        "schema sent"
    );
}

#[test]
fn codex_429_fails_the_turn() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(429));
    let sb = Sandbox::new();
    let Some(r) = exec(&sb, &model, "hello") else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    // The retry notice is a top-level `error` line; the turn then fails naming the status.
    let notice = r.last("error");
    assert!(
        notice["message"].as_str().unwrap().contains("429"),
        "{notice}"
    );
    let failed = r.last("turn.failed");
    assert!(
        failed["error"]["message"].as_str().unwrap().contains("429"),
        "{failed}"
    );
}
