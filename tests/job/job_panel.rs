//! A job's panel of auditors goes through the job's policy, through the real binary: the
//! policy's `verdict` hook reads each panel answer (and may be stricter than the auditor), its
//! `audit_prompt` is what a panel auditor is asked, and a member answers like any auditor (JSON,
//! or words such as `LGTM` and `VERDICT:` lines).

use crate::job_env;
use job_env::{DONE, Env, GOOD_WORKER};
use std::path::PathBuf;

/// A `cmd:` panel auditor that answers `done` with `confidence`, and says `name`.
fn says_done(name: &str, confidence: f64) -> String {
    format!(
        "cmd:sh -c 'cat > /dev/null; echo {{\\\"verdict\\\": \\\"done\\\", \\\"reason\\\": \\\"{name} looked\\\", \\\"confidence\\\": {confidence}, \\\"open_criteria\\\": []}}'"
    )
}

/// Writes `source` as a policy file beside the state directory (out of the agents' reach).
fn policy(env: &Env, name: &str, source: &str) -> PathBuf {
    let p = env.private.path().join(name);
    std::fs::write(&p, source).unwrap();
    p
}

/// A `verdict` hook stricter than the auditors: a done without confidence ≥ 0.9 is a retry.
/// The session's own auditor (a command saying `VERDICT: DONE`) gives no structured answer and
/// is read by the built-in reader.
const STRICT: &str = r#"return {
  verdict = function(output, ctx)
    local v = ctx.structured or oneshot.parse_verdict(output)
    if not v then return "none", "no verdict" end
    if ctx.structured and v.verdict == "done" and (v.confidence or 0) < 0.9 then
      return "retry", "done needs confidence 0.9, not " .. tostring(v.confidence) .. " zq52"
    end
    return v.verdict, v.reason, v.confidence
  end,
}"#;

#[test]
fn a_stricter_verdict_hook_fails_the_panel_and_a_human_must_intervene() {
    let env = Env::new();
    let strict = policy(&env, "strict.lua", STRICT);
    let panel = [
        "--panel",
        &says_done("sure", 0.95),
        "--panel",
        &says_done("unsure", 0.5),
    ];
    let mut args = vec!["--activate", "--policy", strict.to_str().unwrap()];
    args.extend_from_slice(&panel);
    let id = env.create(GOOD_WORKER, DONE, &args);
    env.stuck(&id);
    let show = env.show(&id);
    assert_eq!(show["job"]["state"], "INTERVENTION_REQUIRED", "{show:#}");
    let reason = show["job"]["reason"].as_str().unwrap();
    assert!(reason.contains("1 of 2 said done"), "{reason}");
    assert!(
        reason.contains("said retry: done needs confidence 0.9, not 0.5 zq52"),
        "the dissent is the policy's: {reason}"
    );

    // The same panel under the built-in policy passes: the hook made the difference.
    let mut args = vec!["--activate"];
    args.extend_from_slice(&panel);
    let id = env.create(GOOD_WORKER, DONE, &args);
    env.ok(&["job", "step", &id]);
    let show = env.show(&id);
    assert_eq!(show["job"]["state"], "APPROVAL_REQUIRED", "{show:#}");
}

#[test]
fn a_verdict_hook_that_fails_is_an_error_verdict_not_a_pass() {
    let env = Env::new();
    let broken = policy(
        &env,
        "broken.lua",
        r#"return {
  verdict = function(output, ctx)
    if ctx.diff then error("panel verdicts are broken zq53") end
    return oneshot.parse_verdict(output).verdict
  end,
}"#,
    );
    let id = env.create(
        GOOD_WORKER,
        DONE,
        &[
            "--activate",
            "--policy",
            broken.to_str().unwrap(),
            "--panel",
            &says_done("sure", 0.95),
        ],
    );
    env.stuck(&id);
    let show = env.show(&id);
    assert_eq!(show["job"]["state"], "INTERVENTION_REQUIRED", "{show:#}");
    let reason = show["job"]["reason"].as_str().unwrap();
    assert!(reason.contains("said error"), "{reason}");
    assert!(
        reason.contains("panel verdicts are broken zq53"),
        "{reason}"
    );
    assert!(
        reason.contains("broken.lua:"),
        "the line is named: {reason}"
    );
}

#[test]
fn the_panel_is_asked_the_policy_audit_prompt_with_the_task_and_the_diff() {
    let env = Env::new();
    // For the session's own auditor (no diff in its ctx) the built-in prompt stays.
    let prompts = policy(
        &env,
        "prompts.lua",
        r#"return {
  audit_prompt = function(ctx)
    if not ctx.diff then return nil end
    return "PANEL zq54 task=" .. ctx.task .. " files=" .. table.concat(ctx.changed_files, ",")
      .. " step=" .. ctx.iteration .. "/" .. ctx.max_iterations .. "\n" .. ctx.diff
  end,
}"#,
    );
    let judge = "cmd:sh -c 'cat > panel-prompt.txt; echo {\\\"verdict\\\": \\\"done\\\", \\\"reason\\\": \\\"ok\\\", \\\"confidence\\\": 1, \\\"open_criteria\\\": []}'";
    // It would say retry (and the job would not reach APPROVAL_REQUIRED) if it saw the hook's.
    let session_auditor =
        "sh -c 'if grep -q zq54; then echo VERDICT: RETRY; else echo VERDICT: DONE; fi'";
    let id = env.create(
        GOOD_WORKER,
        session_auditor,
        &[
            "--activate",
            "--policy",
            prompts.to_str().unwrap(),
            "--panel",
            judge,
        ],
    );
    env.ok(&["job", "step", &id]);
    let show = env.show(&id);
    assert_eq!(show["job"]["state"], "APPROVAL_REQUIRED", "{show:#}");
    let ws = PathBuf::from(show["job"]["workspace"]["path"].as_str().unwrap());
    let seen = std::fs::read_to_string(ws.join("panel-prompt.txt")).unwrap();
    assert!(
        seen.starts_with("PANEL zq54 task=write hi to f.txt files=f.txt step=1/5\n"),
        "{seen}"
    );
    assert!(seen.contains("diff --git a/f.txt b/f.txt"), "{seen}");
    assert!(seen.contains("+hi"), "{seen}");
}

/// A `cmd:` panel member that reads its prompt and then runs `then` (shell words).
fn member(then: &str) -> String {
    format!("cmd:sh -c 'cat > /dev/null; {then}'")
}

/// The panel's verdicts in the job's last artifact version.
fn panel_said(show: &serde_json::Value) -> Vec<serde_json::Value> {
    let arts = show["artifacts"].as_array().unwrap();
    arts.last().unwrap()["panel"].as_array().unwrap().clone()
}

/// A member answers as a session's auditor may: `LGTM`, read by the policy's `verdict` hook
/// from its text — the same hook, and the same answer, the session's own auditor passed with.
#[test]
fn a_member_that_answers_lgtm_is_read_by_the_policy_as_a_session_auditor_is() {
    let env = Env::new();
    let lgtm = policy(
        &env,
        "lgtm.lua",
        r#"return {
  verdict = function(output, ctx)
    if output:find("LGTM") then return "done", "looks good to me zq55", 0.8 end
    return oneshot.parse_verdict(output) or "none"
  end,
}"#,
    );
    let id = env.create(
        GOOD_WORKER,
        "echo LGTM",
        &[
            "--activate",
            "--policy",
            lgtm.to_str().unwrap(),
            "--panel",
            &member("echo LGTM"),
        ],
    );
    env.ok(&["job", "step", &id]);
    let show = env.show(&id);
    assert_eq!(show["job"]["state"], "APPROVAL_REQUIRED", "{show:#}");
    let said = panel_said(&show);
    assert_eq!(said.len(), 1, "{show:#}");
    assert_eq!(said[0]["verdict"], "done", "{show:#}");
    assert_eq!(said[0]["reason"], "looks good to me zq55");
    assert_eq!(said[0]["confidence"], 0.8);
}

/// A rejection in words, with the `VERDICT:` line the built-in reader takes, is a dissent
/// with its reason, as it would be a session auditor's retry.
#[test]
fn a_member_rejection_in_words_is_a_dissent() {
    let env = Env::new();
    let id = env.create(
        GOOD_WORKER,
        DONE,
        &[
            "--activate",
            "--panel",
            &member("echo It says hi.; echo VERDICT: RETRY - f.txt must say hello zq56"),
        ],
    );
    env.stuck(&id);
    let show = env.show(&id);
    assert_eq!(show["job"]["state"], "INTERVENTION_REQUIRED", "{show:#}");
    let reason = show["job"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("said retry: f.txt must say hello zq56"),
        "{reason}"
    );
}

/// An answer the built-in reader finds no verdict in (`LGTM` without a policy that reads it)
/// is asked again with what was missing, as a session's auditor is, and then is an `error`.
#[test]
fn a_member_without_a_verdict_is_asked_again_then_says_error() {
    let env = Env::new();
    let judge = "cmd:sh -c 'cat >> panel-prompts.txt; echo LGTM'";
    let id = env.create(GOOD_WORKER, DONE, &["--activate", "--panel", judge]);
    env.stuck(&id);
    let show = env.show(&id);
    assert_eq!(show["job"]["state"], "INTERVENTION_REQUIRED", "{show:#}");
    let reason = show["job"]["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "said error: the policy's verdict found none in 3 answer(s): the answer held no \
             verdict: end it with VERDICT: DONE, RETRY or IMPOSSIBLE"
        ),
        "{reason}"
    );
    let ws = PathBuf::from(show["job"]["workspace"]["path"].as_str().unwrap());
    let prompts = std::fs::read_to_string(ws.join("panel-prompts.txt")).unwrap();
    let again = "Your previous answer did not fit the schema:\nthe answer held no verdict";
    assert_eq!(prompts.matches(again).count(), 2, "{prompts}");
}
