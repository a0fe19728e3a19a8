//! Claude Code 2.1.197: `claude -p … --output-format stream-json --verbose` against the fake
//! Anthropic Messages API.

use super::harness::{Run, Sandbox, find, run};
use crate::fake_model::{Api, FakeModel, Reply};
use serde_json::json;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// `claude` pointed at `model`, with a private config dir, no nonessential traffic and one retry.
pub fn claude(sb: &Sandbox, model: &FakeModel) -> Option<Command> {
    let bin: PathBuf = find("claude")?;
    let mut c = sb.command(&bin);
    c.env("ANTHROPIC_BASE_URL", model.url())
        .env("ANTHROPIC_API_KEY", "fake-key")
        .env("CLAUDE_CONFIG_DIR", sb.home().join(".claude"))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "1")
        .env("API_TIMEOUT_MS", "5000");
    Some(c)
}

/// `claude -p PROMPT --output-format stream-json --verbose EXTRA…`, run to completion.
fn print(sb: &Sandbox, model: &FakeModel, prompt: &str, extra: &[&str]) -> Option<Run> {
    let mut c = claude(sb, model)?;
    c.args(["-p", prompt, "--output-format", "stream-json", "--verbose"])
        .args(extra);
    Some(run(c, LIMIT))
}

#[test]
fn claude_text_answer() {
    let model = FakeModel::with([Reply::Text("Hello from the fake model.".into())]);
    let sb = Sandbox::new();
    let Some(r) = print(&sb, &model, "say hello zq1", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let init = r
        .of_type("system")
        .into_iter()
        .find(|e| e["subtype"] == "init")
        .expect("init");
    assert_eq!(init["claude_code_version"], "2.1.197");
    let result = r.last("result");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "Hello from the fake model.");
    assert_eq!(result["session_id"], init["session_id"]);
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 1, "one model turn");
    assert_eq!(reqs[0].api, Api::Anthropic);
    assert!(reqs[0].path.starts_with("/v1/messages"), "{}", reqs[0].path);
    assert_eq!(reqs[0].body["stream"], true);
    assert_eq!(reqs[0].header("x-api-key"), Some("<redacted>"));
    assert_eq!(reqs[0].count("zq1"), 1, "the prompt reaches the model once");
}

#[test]
fn claude_bash_tool_result_reaches_the_model() {
    let model = FakeModel::with([
        Reply::Bash("echo allowed-test > allowed.txt && cat allowed.txt".into()),
        Reply::Text("done".into()),
    ]);
    let sb = Sandbox::new();
    let Some(r) = print(&sb, &model, "run it", &["--allowedTools", "Bash"]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(
        std::fs::read_to_string(sb.work().join("allowed.txt")).unwrap(),
        "allowed-test\n"
    );
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 2, "{}", r.dump());
    let second = reqs[1].body_text();
    assert!(
        second.contains("tool_result") && second.contains("allowed-test"),
        "{second}"
    );
    let tool_results: Vec<_> = r
        .of_type("user")
        .into_iter()
        .filter(|u| u["message"]["content"][0]["type"] == "tool_result")
        .collect();
    assert_eq!(tool_results.len(), 1, "{}", r.dump());
    assert_eq!(r.last("result")["result"], "done");
    assert_eq!(r.last("result")["num_turns"], 2);
}

#[test]
fn claude_write_with_accept_edits_creates_the_file() {
    let sb = Sandbox::new();
    let path = sb.work().join("written.txt");
    let model = FakeModel::with([
        Reply::Write {
            path: path.display().to_string(),
            content: "content from Write".into(),
        },
        Reply::Text("written".into()),
    ]);
    let Some(r) = print(
        &sb,
        &model,
        "write it",
        &["--permission-mode", "acceptEdits"],
    ) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "content from Write"
    );
    assert!(
        model.model_requests()[1]
            .body_text()
            .contains("File created successfully")
    );
    assert!(
        r.last("result")["permission_denials"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn claude_denied_tool_is_reported_and_exits_zero() {
    // No --allowedTools: headless Claude denies Bash and says so in the result.
    let model = FakeModel::with([
        Reply::Bash("touch denied.txt".into()),
        Reply::Text("ok".into()),
    ]);
    let sb = Sandbox::new();
    let Some(r) = print(&sb, &model, "run it", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(!sb.work().join("denied.txt").exists());
    let denials = r.last("result")["permission_denials"].clone();
    assert_eq!(denials[0]["tool_name"], "Bash", "{}", r.dump());
}

#[test]
fn claude_json_schema_answer_is_structured_output() {
    let answer = json!({"summary": "all good", "ok": true});
    let model = FakeModel::with([Reply::Json(answer.clone())]);
    let sb = Sandbox::new();
    let schema = r#"{"type":"object","properties":{"summary":{"type":"string"},"ok":{"type":"boolean"}},"required":["summary","ok"]}"#;
    let Some(r) = print(&sb, &model, "judge", &["--json-schema", schema]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(r.last("result")["structured_output"], answer);
    assert!(
        model.model_requests()[0]
            .tool_names()
            .contains(&"StructuredOutput".to_string())
    );
}

#[test]
fn claude_401_fails_fast() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(401));
    let sb = Sandbox::new();
    let Some(r) = print(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let result = r.last("result");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["api_error_status"], 401);
    assert!(
        result["result"].as_str().unwrap().contains("401"),
        "{result}"
    );
    assert!(r.elapsed < Duration::from_secs(20), "{:?}", r.elapsed);
}

#[test]
fn claude_500_exits_1() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(500));
    let sb = Sandbox::new();
    let Some(r) = print(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert_eq!(r.last("result")["is_error"], true);
    assert!(
        !r.of_type("system")
            .iter()
            .all(|e| e["subtype"] != "api_retry"),
        "a retry notice"
    );
}

#[test]
fn claude_500_then_success_is_retried_by_claude_itself() {
    let model = FakeModel::with([Reply::Status(500), Reply::Text("recovered".into())]);
    let sb = Sandbox::new();
    let Some(r) = print(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(r.last("result")["result"], "recovered");
    assert_eq!(model.model_requests().len(), 2);
}

#[test]
fn claude_stream_cut_is_an_error() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Cut("partial ans".into()));
    let sb = Sandbox::new();
    let Some(r) = print(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert_eq!(r.last("result")["is_error"], true);
}

#[test]
fn claude_hang_is_bounded_by_api_timeout() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Hang);
    let sb = Sandbox::new();
    let Some(mut c) = claude(&sb, &model) else {
        return;
    };
    c.env("API_TIMEOUT_MS", "1500").args([
        "-p",
        "hello",
        "--output-format",
        "stream-json",
        "--verbose",
    ]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let result = r.last("result");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["result"], "Request timed out");
    assert!(result["api_error_status"].is_null(), "{result}");
    assert_eq!(model.model_requests().len(), 2, "one retry");
}

/// A provider status Claude retries: a `system/api_retry` line names it (as `error`), and the
/// final `result` carries it.
fn retried_then_named(status: u16, error: &str) {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(status));
    let sb = Sandbox::new();
    let Some(r) = print(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let retry = r
        .of_type("system")
        .into_iter()
        .find(|e| e["subtype"] == "api_retry")
        .expect("retry");
    assert_eq!(retry["error_status"], status);
    assert_eq!(retry["error"], error);
    assert_eq!(r.last("result")["api_error_status"], status);
}

#[test]
fn claude_529_is_retried_then_names_the_status() {
    retried_then_named(529, "overloaded");
}

#[test]
fn claude_preassigned_session_id_transcript_and_resume() {
    let model = FakeModel::with([
        Reply::Text("first answer".into()),
        Reply::Text("second answer".into()),
    ]);
    let sb = Sandbox::new();
    let sid = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";
    let Some(r) = print(&sb, &model, "first zq10", &["--session-id", sid]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(r.last("result")["session_id"], sid);
    // The transcript: $CLAUDE_CONFIG_DIR/projects/<cwd, '/' and '.' as '-'>/<sid>.jsonl.
    let found: Vec<_> = walk(&sb.home().join(".claude/projects"))
        .into_iter()
        .filter(|p| p.ends_with(format!("{sid}.jsonl")))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let transcript = std::fs::read_to_string(&found[0]).unwrap();
    assert!(transcript.lines().any(|l| {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        v["type"] == "assistant" && v["message"]["content"][0]["text"] == "first answer"
    }));
    let Some(r2) = print(&sb, &model, "second zq11", &["--resume", sid]) else {
        return;
    };
    assert_eq!(r2.code(), Some(0), "{}", r2.dump());
    assert_eq!(r2.last("result")["session_id"], sid);
    let second = &model.model_requests()[1];
    assert!(
        second.body_text().contains("first answer"),
        "the history is sent on resume"
    );
    assert_eq!(second.count("zq10"), 1);
    assert_eq!(second.count("zq11"), 1);
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
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

#[test]
fn claude_partial_messages_stream_the_raw_events_keyed_by_message_id() {
    let model = FakeModel::with([Reply::Text("streamed answer".into())]);
    let sb = Sandbox::new();
    let Some(r) = print(&sb, &model, "hello", &["--include-partial-messages"]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let raw: Vec<_> = r
        .of_type("stream_event")
        .into_iter()
        .map(|e| e["event"].clone())
        .collect();
    let kinds: Vec<_> = raw.iter().filter_map(|e| e["type"].as_str()).collect();
    for k in ["message_start", "content_block_delta", "message_stop"] {
        assert!(kinds.contains(&k), "{kinds:?}");
    }
    let id = raw[0]["message"]["id"].as_str().unwrap();
    assert_eq!(
        r.last("assistant")["message"]["id"],
        id,
        "one id across raw and whole events"
    );
}

#[test]
fn claude_429_is_retried_then_names_the_status() {
    retried_then_named(429, "rate_limit");
}
