//! Aider 0.86.2: `aider --message …` against the fake OpenAI Chat Completions API (litellm).
//! Aider has no tools: the model's text is the edit, and its exit code is 0 even on failure, so
//! these tests read its plain-text output.

use super::harness::{Run, Sandbox, find, run};
use crate::fake_model::{Api, FakeModel, Reply};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

/// One entry for the fake model: enough for Aider's non-empty check, zero cost.
const PRICES: &str = r#"{"fake-model": {"litellm_provider": "openai", "mode": "chat",
  "max_input_tokens": 128000, "max_output_tokens": 4096,
  "input_cost_per_token": 0, "output_cost_per_token": 0}}"#;

/// `aider` pointed at `model` (`OPENAI_API_BASE`), with a price list of our own so Aider does
/// not download one: an empty `{}` (as the shared notes suggest) is falsy in Aider's check and
/// it fetches from GitHub anyway.
pub fn command(sb: &Sandbox, model: &FakeModel) -> Option<std::process::Command> {
    let bin = find("aider")?;
    sb.home_file(".aider/caches/model_prices_and_context_window.json", PRICES);
    let mut c = sb.command(&bin);
    c.env("OPENAI_API_BASE", format!("{}/v1", model.url()))
        .env("OPENAI_API_KEY", "fake-key")
        // litellm fetches its model price map from GitHub at import unless told to use its own.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True");
    Some(c)
}

/// Runs aider in the sandbox: no git, no update check, no analytics, whole-file edits (the format
/// `Reply::Write` renders).
fn aider(sb: &Sandbox, model: &FakeModel, prompt: &str, files: &[&str]) -> Option<Run> {
    let mut c = command(sb, model)?;
    c.args([
        "--model",
        "openai/fake-model",
        "--yes-always",
        "--no-pretty",
        "--no-git",
    ])
    .args([
        "--no-check-update",
        "--analytics-disable",
        "--no-show-model-warnings",
    ])
    .args(["--edit-format", "whole", "--message", prompt])
    .args(files);
    Some(run(c, LIMIT))
}

#[test]
fn aider_text_answer() {
    let model = FakeModel::with([Reply::Text("Hello from the fake model.".into())]);
    let sb = Sandbox::new();
    let Some(r) = aider(&sb, &model, "say hello zq4", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(
        r.stdout.contains("Hello from the fake model."),
        "{}",
        r.dump()
    );
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 1, "{:#?}", model.requests());
    assert_eq!(reqs[0].api, Api::Chat);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].body["stream"], true);
    assert_eq!(reqs[0].count("zq4"), 1, "the prompt reaches the model once");
    assert!(
        !r.stdout.contains("githubusercontent"),
        "no outbound fetch\n{}",
        r.dump()
    );
}

#[test]
fn aider_whole_file_edit_writes_the_file() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("hello.txt"), "old\n").unwrap();
    let model = FakeModel::with([Reply::Write {
        path: "hello.txt".into(),
        content: "new content".into(),
    }]);
    let Some(r) = aider(&sb, &model, "rewrite hello.txt", &["hello.txt"]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(
        std::fs::read_to_string(sb.work().join("hello.txt")).unwrap(),
        "new content\n",
        "{}",
        r.dump()
    );
    // The file's old content went to the model with the prompt.
    assert!(model.model_requests()[0].body_text().contains("old"));
}

#[test]
fn aider_401_exits_0_and_says_so() {
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(401));
    let sb = Sandbox::new();
    let Some(r) = aider(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(
        r.code(),
        Some(0),
        "aider exits 0 even on an auth error\n{}",
        r.dump()
    );
    // litellm names a 401 with OpenAI's error body a BadRequestError, not an AuthenticationError.
    assert!(
        r.stdout.contains("litellm.BadRequestError") && r.stdout.contains("fake 401"),
        "{}",
        r.dump()
    );
    assert!(r.elapsed < Duration::from_secs(30), "{:?}", r.elapsed);
}

#[test]
fn aider_500_then_success_is_retried_by_aider() {
    let model = FakeModel::with([Reply::Status(500), Reply::Text("recovered".into())]);
    let sb = Sandbox::new();
    let Some(r) = aider(&sb, &model, "hello", &[]) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(r.stdout.contains("recovered"), "{}", r.dump());
    assert!(model.model_requests().len() >= 2);
}
