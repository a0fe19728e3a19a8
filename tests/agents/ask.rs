//! `oneshot ask` with the real agent CLIs offline: Claude answers through `structured_output`,
//! Codex — which does not enforce its `--output-schema` — is asked again when its answer breaks
//! the schema and refused when it never fits, Gemini's JSON is found in its prose.

use super::harness::{Sandbox, run};
use super::with_oneshot::{LIMIT, aider_args, codex_overrides, oneshot, role_args};
use crate::fake_model::{FakeModel, Reply};
use serde_json::{Value, json};

fn verdict(v: &str) -> Value {
    json!({"verdict": v, "reason": "checked zq71", "confidence": 0.75, "open_criteria": []})
}

/// The answer oneshot printed.
fn printed(r: &super::harness::Run) -> Value {
    serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", r.dump()))
}

#[test]
fn claude_answers_through_its_structured_output() {
    let sb = Sandbox::new();
    let model = FakeModel::with([Reply::Json(verdict("done"))]);
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&claude]);
    c.args([
        "ask",
        "--target",
        "claude",
        "--schema",
        "verdict",
        "is it done?",
    ]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(printed(&r), verdict("done"));
    let reqs = model.model_requests();
    assert!(
        reqs[0].tool_names().iter().any(|t| t == "StructuredOutput"),
        "the schema went inline"
    );
    assert_eq!(reqs[0].count("is it done?"), 1);
}

#[test]
fn codex_breaking_the_schema_is_asked_again_then_refused() {
    let sb = Sandbox::new();
    let model = FakeModel::with([
        Reply::Text(r#"{"verdict": "maybe", "reason": "unsure"}"#.into()),
        Reply::Text(verdict("retry").to_string()),
    ]);
    let Some(codex) = super::codex::codex(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&codex]);
    c.args(["ask", "--target", "codex:gpt-5.5", "--schema", "verdict"])
        .args(role_args("target", &codex_overrides(&codex)))
        .arg("is it done?");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(printed(&r), verdict("retry"));
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 2, "{}", r.dump());
    let again = reqs[1].body_text();
    assert!(again.contains("did not fit the schema"), "{again}");
    assert!(again.contains("/verdict"), "{again}");

    let sb = Sandbox::new();
    let model = FakeModel::start();
    model.set_fallback(Reply::Text(r#"{"verdict": "maybe"}"#.into()));
    let Some(codex) = super::codex::codex(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&codex]);
    c.args([
        "ask",
        "--target",
        "codex:gpt-5.5",
        "--schema",
        "verdict",
        "--attempts",
        "2",
    ])
    .args(role_args("target", &codex_overrides(&codex)))
    .arg("is it done?");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(
        r.stderr.contains("no answer fit the schema in 2 run(s)"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.trim().is_empty());
    assert_eq!(model.model_requests().len(), 2);
}

#[test]
fn gemini_json_is_found_in_its_prose() {
    let sb = Sandbox::new();
    let model = FakeModel::with([Reply::Text(format!(
        "I looked at it.\n```json\n{}\n```\nThat is all.",
        serde_json::to_string_pretty(&verdict("impossible")).unwrap()
    ))]);
    let Some(gemini) = super::gemini::command(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&gemini]);
    c.args([
        "ask",
        "--target",
        &format!("gemini:{}", super::gemini::MODEL),
    ])
    .args(["--schema", "verdict", "is it done?"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(printed(&r), verdict("impossible"));
    let body = model.model_requests()[0].body_text();
    assert!(
        body.contains("open_criteria"),
        "the schema is in the prompt: {body}"
    );
}

#[test]
fn a_refused_key_names_the_agent_and_what_to_set() {
    let sb = Sandbox::new();
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(401));
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&claude]);
    c.args(["ask", "--target", "claude", "--schema", "verdict", "q"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(r.stderr.contains("claude failed (auth"), "{}", r.dump());
    assert!(r.stderr.contains("ANTHROPIC_API_KEY"), "{}", r.dump());
}

#[test]
fn aider_json_is_found_in_its_chat_output() {
    let sb = Sandbox::new();
    let model = FakeModel::with([Reply::Text(format!(
        "Sure. My answer:\n\n{}\n\nAnything else?",
        verdict("retry")
    ))]);
    let Some(aider) = super::aider::command(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&aider]);
    c.args(["ask", "--target", "aider", "--schema", "verdict"])
        .args(role_args("target", &aider_args()))
        .arg("is it done?");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(printed(&r), verdict("retry"));
}

/// `oneshot ask --policy FILE`: the policy's `permit` answers Claude's tool requests, as it does
/// a session auditor's. The denied Bash call never runs, the model reads why, and oneshot says
/// the refusal on stderr; the answer still comes through its structured output.
#[test]
fn ask_with_a_policy_asks_its_permit() {
    let sb = Sandbox::new();
    let policy = sb.tmp.path().join("guard.lua");
    std::fs::write(
        &policy,
        r#"return {
  permit = function(tool, input, ctx, role)
    if tool == "Bash" then
      return "deny", "no shell for " .. role .. " zq83 (" .. ctx.task .. ")"
    end
    return "allow"
  end,
}"#,
    )
    .unwrap();
    let model = FakeModel::with([
        Reply::Bash("echo ran > ran.txt".into()),
        Reply::Json(verdict("done")),
    ]);
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&claude]);
    c.args(["ask", "--target", "claude", "--policy"])
        .arg(&policy)
        .args(["--schema", "verdict", "is it done?"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(printed(&r), verdict("done"));
    assert!(
        !sb.work().join("ran.txt").exists(),
        "the denied command never ran"
    );
    let reqs = model.model_requests();
    assert!(reqs.len() >= 2, "{}", r.dump());
    assert!(
        reqs[1]
            .body_text()
            .contains("no shell for auditor zq83 (is it done?)"),
        "the model sees the denial, with the hook's ctx and role"
    );
    assert!(
        r.stderr
            .contains("refused the target's Bash request: no shell for auditor zq83"),
        "{}",
        r.dump()
    );

    // A policy that does not load is a usage error, before anything runs.
    std::fs::write(&policy, "return 42").unwrap();
    let mut c = oneshot(&sb, &[&claude]);
    c.args(["ask", "--target", "claude", "--policy"])
        .arg(&policy)
        .args(["--schema", "verdict", "is it done?"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(2), "{}", r.dump());
    assert!(r.stderr.contains("--policy"), "{}", r.dump());
    assert!(r.stderr.contains("guard.lua"), "{}", r.dump());
}

/// A job's panel auditor that is an agent asks the job's policy for its tools: Claude's Bash is
/// denied by the `permit` hook (the model reads why), and the refusal travels with that
/// auditor's dissent into the job's reason.
#[test]
fn a_claude_panel_auditor_asks_the_jobs_permit() {
    let sb = Sandbox::new();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(sb.work())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(sb.work().join("a.txt"), "a\n").unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-qm", "a"]);
    let policy = sb.tmp.path().join("panel.lua");
    std::fs::write(
        &policy,
        r#"return {
  permit = function(tool, input, ctx, role)
    if tool == "Bash" and ctx.diff then
      return "deny", "no shell for the panel zq84 (" .. table.concat(ctx.changed_files, ",") .. ")"
    end
    return "allow"
  end,
}"#,
    )
    .unwrap();
    let model = FakeModel::with([
        Reply::Bash("echo ran > ran.txt".into()),
        Reply::Json(verdict("retry")),
    ]);
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    let oneshot_job_code = |args: &[&str], code: i32| {
        let mut c = oneshot(&sb, &[&claude]);
        c.env("ONESHOT_ACTOR", "tester").arg("job").args(args);
        let r = run(c, LIMIT);
        assert_eq!(r.code(), Some(code), "{args:?}: {}", r.dump());
        r.stdout
    };
    let oneshot_job = |args: &[&str]| oneshot_job_code(args, 0);
    let id = oneshot_job(&[
        "create",
        "--worker-cmd",
        "sh -c 'echo hi > f.txt'",
        "--auditor-cmd",
        "echo VERDICT: DONE",
        "--panel",
        "claude",
        "--policy",
        policy.to_str().unwrap(),
        "--activate",
        "write hi to f.txt",
    ]);
    let id = id.trim();
    // The step leaves the job needing a human: `job step` exits 1.
    oneshot_job_code(&["step", id], 1);
    let show: Value = serde_json::from_str(&oneshot_job(&["show", id, "--json"])).unwrap();
    assert_eq!(show["job"]["state"], "INTERVENTION_REQUIRED", "{show:#}");
    let reason = show["job"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("claude said retry: checked zq71"),
        "the dissent: {reason}"
    );
    assert!(
        reason.contains("tool requests refused: Bash: no shell for the panel zq84 (f.txt)"),
        "the refusal, with the panel's ctx: {reason}"
    );
    let reqs = model.model_requests();
    assert!(reqs.len() >= 2, "{reqs:?}");
    assert!(
        reqs[1].body_text().contains("no shell for the panel zq84"),
        "the model sees the denial"
    );
    let ws = show["job"]["workspace"]["path"].as_str().unwrap();
    assert!(
        !std::path::Path::new(ws).join("ran.txt").exists(),
        "the denied command never ran"
    );
}
