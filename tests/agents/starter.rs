//! The policy `oneshot init` writes reads every agent auditor's real answer: Claude's
//! `structured_output`, Codex's `--output-schema` message, and the JSON that Gemini, Aider and
//! Cline give in prose. Each auditor rejects once with a critique, then accepts: the session
//! completes in two iterations and the critique reached the history. (Before, the starter read
//! only `VERDICT:` lines, so every agent verdict read as "no verdict" and every paid iteration
//! was spent until FAILED.)

use super::harness::{Sandbox, run};
use super::with_oneshot::{LIMIT, codex_overrides, oneshot, role_args, state};
use crate::fake_model::{FakeModel, Reply};
use serde_json::{Value, json};
use std::process::Command;

/// The verdict object as each kind of auditor gives it.
enum Shape {
    /// Claude answers through its StructuredOutput tool.
    Tool,
    /// The bare object as the message (Codex's response format).
    Bare,
    /// The object in a fenced block inside prose.
    Prose,
}

fn answers(shape: Shape, critique: &str) -> [Reply; 2] {
    let retry = json!({"verdict": "retry", "reason": critique, "confidence": 0.9,
                       "open_criteria": ["a second line"]});
    let done = json!({"verdict": "done", "reason": "both lines", "confidence": 0.8,
                      "open_criteria": []});
    [retry, done].map(|v: Value| match shape {
        Shape::Tool => Reply::Json(v),
        Shape::Bare => Reply::Text(v.to_string()),
        Shape::Prose => Reply::Text(format!(
            "I checked the work.\n```json\n{}\n```\n",
            serde_json::to_string_pretty(&v).unwrap()
        )),
    })
}

/// `oneshot init` in the sandbox's workdir, then `auditor = AGENT` in its oneshot.toml and a
/// command worker; runs the task there with `extra` arguments and checks the outcome.
fn starter_with(
    sb: &Sandbox,
    agent: &str,
    agents: &[&Command],
    extra: Vec<String>,
    critique: &str,
) {
    let init = oneshot(sb, &[])
        .args(["init", "--dir"])
        .arg(sb.work())
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    let toml = sb.work().join("oneshot.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        format!("{text}\nauditor = \"{agent}\"\nworker-cmd = \"sh -c 'echo work >> w.txt'\"\n"),
    )
    .unwrap();
    let mut c = oneshot(sb, agents);
    c.current_dir(sb.work()).args(extra).arg("write two lines");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let s = state(sb);
    assert_eq!(s["state"], "COMPLETED", "{s:#}");
    assert_eq!(s["iteration_count"], 2, "{s:#}");
    assert!(
        s["policy"]["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("oneshot.lua")),
        "the starter policy decided: {s:#}"
    );
    assert!(s["history"].to_string().contains(critique), "{s:#}");
}

#[test]
fn claude_auditor() {
    let sb = Sandbox::new();
    let model = FakeModel::with(answers(Shape::Tool, "add line two zq71"));
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    starter_with(&sb, "claude", &[&claude], Vec::new(), "add line two zq71");
}

#[test]
fn codex_auditor() {
    let sb = Sandbox::new();
    let model = FakeModel::with(answers(Shape::Bare, "add line two zq72"));
    let Some(codex) = super::codex::codex(&sb, &model) else {
        return;
    };
    let extra = role_args("auditor", &codex_overrides(&codex));
    starter_with(&sb, "codex:gpt-5.5", &[&codex], extra, "add line two zq72");
}

#[test]
fn gemini_auditor() {
    let sb = Sandbox::new();
    let model = FakeModel::with(answers(Shape::Prose, "add line two zq73"));
    let Some(gemini) = super::gemini::command(&sb, &model) else {
        return;
    };
    let agent = format!("gemini:{}", super::gemini::MODEL);
    starter_with(&sb, &agent, &[&gemini], Vec::new(), "add line two zq73");
}

#[test]
fn aider_auditor() {
    let sb = Sandbox::new();
    let model = FakeModel::with(answers(Shape::Prose, "add line two zq74"));
    let Some(aider) = super::aider::command(&sb, &model) else {
        return;
    };
    // Not `aider_args()`: its `--edit-format whole` would undo the auditor's `--chat-mode ask`
    // (the same option) and Aider would write the answer to a file.
    let args = ["--model", "openai/fake-model", "--no-git"].map(String::from);
    let extra = role_args("auditor", &args);
    starter_with(&sb, "aider", &[&aider], extra, "add line two zq74");
}

#[test]
fn cline_auditor() {
    let sb = Sandbox::new();
    let model = FakeModel::with(answers(Shape::Bare, "add line two zq75"));
    let Some(cline) = super::cline::command(&sb, &model) else {
        return;
    };
    let data = format!("--data-dir={}", super::cline::data_dir(&sb).display());
    let extra = role_args("auditor", &[data]);
    starter_with(&sb, "cline", &[&cline], extra, "add line two zq75");
}
