//! Gemini CLI 0.61.0: `gemini -m MODEL -p PROMPT --output-format stream-json --yolo` against the
//! fake Gemini API (`streamGenerateContent?alt=sse`).

use super::harness::{Run, Sandbox, find, run};
use crate::fake_model::{Api, FakeModel, Reply};
use std::process::Command;
use std::time::Duration;

/// A known model slug (an unknown one still works, but adds a warning).
pub const MODEL: &str = "gemini-2.5-flash";

const LIMIT: Duration = Duration::from_secs(60);

/// API-key auth, no telemetry or update checks, and two attempts per model call instead of the
/// default five with backoff (`general.maxAttempts`, read from the bundle's settings schema), as
/// the CLI reads them from its settings.
const SETTINGS: &str = r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},
 "privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},
 "general":{"enableAutoUpdate":false,"maxAttempts":2}}"#;

/// `gemini` with API-key auth against `model`, its settings in the sandbox's HOME.
pub fn command(sb: &Sandbox, model: &FakeModel) -> Option<Command> {
    let bin = find("gemini")?;
    sb.home_file(".gemini/settings.json", SETTINGS);
    let mut c = sb.command(&bin);
    c.env("GEMINI_API_KEY", "fake-key")
        .env("GOOGLE_GEMINI_BASE_URL", model.url())
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true");
    Some(c)
}

/// Runs gemini headless. `-m` always (otherwise a model-router call runs first); `--yolo`
/// because without it the shell tool is not even registered in headless mode.
fn gemini(sb: &Sandbox, model: &FakeModel, prompt: &str, extra: &[&str]) -> Option<Run> {
    let mut c = command(sb, model)?;
    c.args(["-m", MODEL, "-p", prompt, "--output-format", "stream-json"])
        .args(["--skip-trust", "--yolo"])
        .args(extra);
    Some(run(c, LIMIT))
}

/// The assistant's answer: the concatenated `message` deltas with role assistant.
fn answer(r: &Run) -> String {
    r.of_type("message")
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn gemini_text_answer() {
    let model = FakeModel::with([Reply::Text("Hello from the fake model.".into())]);
    let sb = Sandbox::new();
    let Some(r) = gemini(&sb, &model, "say hello zq3", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(r.last("init")["session_id"].is_string());
    assert_eq!(answer(&r), "Hello from the fake model.");
    assert_eq!(r.last("result")["status"], "success");
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 1, "{:#?}", model.requests());
    assert_eq!(reqs[0].api, Api::Gemini);
    assert!(
        reqs[0]
            .path
            .contains("gemini-2.5-flash:streamGenerateContent"),
        "{}",
        reqs[0].path
    );
    assert_eq!(reqs[0].count("zq3"), 1, "the prompt reaches the model once");
}

#[test]
fn gemini_shell_tool_result_reaches_the_model() {
    let model = FakeModel::with([
        Reply::Bash("echo hi from gemini > made_by_gemini.txt && cat made_by_gemini.txt".into()),
        Reply::Text("done".into()),
    ]);
    let sb = Sandbox::new();
    let Some(r) = gemini(&sb, &model, "run it", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(
        std::fs::read_to_string(sb.work().join("made_by_gemini.txt")).unwrap(),
        "hi from gemini\n"
    );
    assert_eq!(r.last("tool_use")["tool_name"], "run_shell_command");
    assert_eq!(r.last("tool_result")["status"], "success");
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 2, "{}", r.dump());
    let second = reqs[1].body_text();
    assert!(
        second.contains("functionResponse") && second.contains("hi from gemini"),
        "{second}"
    );
}

#[test]
fn gemini_write_file_creates_the_file() {
    let sb = Sandbox::new();
    let path = sb.work().join("written.txt");
    let model = FakeModel::with([
        Reply::Write {
            path: path.display().to_string(),
            content: "content from write_file".into(),
        },
        Reply::Text("written".into()),
    ]);
    let Some(r) = gemini(&sb, &model, "write it", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "content from write_file"
    );
    assert_eq!(r.last("tool_use")["tool_name"], "write_file");
}

#[test]
fn gemini_401_fails_fast_with_exit_145() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(401));
    let sb = Sandbox::new();
    let Some(r) = gemini(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(145), "{}", r.dump());
    assert!(r.elapsed < Duration::from_secs(30), "{:?}", r.elapsed);
}

#[test]
fn gemini_500_exits_244_after_its_attempts() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(500));
    let sb = Sandbox::new();
    let Some(r) = gemini(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(244), "{}", r.dump());
    assert_eq!(model.model_requests().len(), 2, "general.maxAttempts = 2");
    assert!(r.elapsed < Duration::from_secs(40), "{:?}", r.elapsed);
}

#[test]
fn gemini_stream_cut_is_an_error_result() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Cut("partial ans".into()));
    let sb = Sandbox::new();
    let Some(r) = gemini(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    // The partial text was already streamed out as a delta before the error.
    assert_eq!(answer(&r), "partial ans");
    let result = r.last("result");
    assert_eq!(result["status"], "error");
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap()
            .contains("terminated"),
        "{result}"
    );
}

#[test]
fn gemini_preassigned_session_id() {
    let model = FakeModel::with([Reply::Text("hi".into())]);
    let sb = Sandbox::new();
    let sid = "0b7e9d4c-2f51-4a8e-9c3d-5e6f7a8b9c0d";
    let Some(r) = gemini(&sb, &model, "hello", &["--session-id", sid]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(r.last("init")["session_id"], sid);
}

#[test]
fn gemini_429_exits_173_after_its_attempts() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(429));
    let sb = Sandbox::new();
    let Some(r) = gemini(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(173), "{}", r.dump());
    assert_eq!(model.model_requests().len(), 2);
    let result = r.last("result");
    assert_eq!(result["status"], "error");
    assert!(
        result["error"]["message"].as_str().unwrap().contains("429"),
        "{result}"
    );
}
