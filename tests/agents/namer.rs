//! `job create --namer claude`: the real Claude CLI, against the fake model server, names the
//! job's branch and gives it a nickname through the `branch-suggest` schema; a suggestion git
//! refuses leaves the branch named from the task, with a warning.

use super::harness::{Sandbox, run};
use super::with_oneshot::{LIMIT, oneshot};
use crate::fake_model::{FakeModel, Reply};
use serde_json::{Value, json};

/// A git repository with one commit in the sandbox's work directory.
fn repo(sb: &Sandbox) {
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(sb.work())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(sb.work().join("a.txt"), "a\n").unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-qm", "a"]);
}

/// `oneshot job ARGS…` with the Claude CLI reachable; insists on exit 0; (stdout, stderr).
fn job(sb: &Sandbox, claude: &std::process::Command, args: &[&str]) -> (String, String) {
    let mut c = oneshot(sb, &[claude]);
    c.env("ONESHOT_ACTOR", "tester").arg("job").args(args);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{args:?}: {}", r.dump());
    (r.stdout, r.stderr)
}

fn create(sb: &Sandbox, claude: &std::process::Command) -> (String, String) {
    let (out, err) = job(
        sb,
        claude,
        &[
            "create",
            "--worker-cmd",
            "true",
            "--auditor-cmd",
            "echo VERDICT: DONE",
            "--namer",
            "claude",
            "Teach the list command a --json flag zq91",
        ],
    );
    (out.trim().to_string(), err)
}

#[test]
fn claude_names_the_branch_and_the_nickname_shows_in_job_list() {
    let sb = Sandbox::new();
    repo(&sb);
    let model = FakeModel::with([Reply::Json(
        json!({"branch": "feature/list-json", "nickname": "List JSON flag"}),
    )]);
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    let (id, err) = create(&sb, &claude);
    assert!(!err.contains("warning"), "{err}");
    let short = &id["job-".len()..];
    let (shown, _) = job(&sb, &claude, &["show", &id, "--json"]);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        shown["job"]["spec"]["branch"],
        format!("oneshot/feature/list-json-{short}")
    );
    assert_eq!(shown["job"]["spec"]["nickname"], "List JSON flag");
    let (list, _) = job(&sb, &claude, &["list"]);
    let line = list.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(
        line.contains("[List JSON flag] Teach the list command a --json flag zq91"),
        "{list}"
    );
    // Asked once, with the schema inline (Claude's structured output) and the task.
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    assert!(reqs[0].tool_names().iter().any(|t| t == "StructuredOutput"));
    assert_eq!(reqs[0].count("a --json flag zq91"), 1);
}

#[test]
fn a_branch_git_refuses_leaves_the_name_from_the_task() {
    let sb = Sandbox::new();
    repo(&sb);
    // It fits the schema's pattern, but `..` is no part of a git ref.
    let model = FakeModel::with([Reply::Json(
        json!({"branch": "fix..list", "nickname": "Bad name"}),
    )]);
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    let (id, err) = create(&sb, &claude);
    let slug = format!(
        "oneshot/teach-the-list-command-a-json-flag-zq91-{}",
        &id["job-".len()..]
    );
    assert!(
        err.contains("oneshot: warning: the namer claude (--namer) gave no branch name")
            && err.contains("is not a valid branch name")
            && err.contains(&format!("the branch is {slug}, named from the task")),
        "{err}"
    );
    let (shown, _) = job(&sb, &claude, &["show", &id, "--json"]);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["job"]["spec"]["branch"], slug.as_str());
    assert!(shown["job"]["spec"]["nickname"].is_null(), "{shown}");
}
