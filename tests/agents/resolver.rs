//! `job land --resolver claude`: the real Claude CLI, against the fake model server, resolves a
//! rebase's conflict mid-rebase by writing the merged file in the job's worktree (the built-in
//! rule lets a resolver edit there, and only there) and answering with the `conflict-resolve`
//! schema; the land goes on. A resolver that answers without touching the markers is refused
//! and nothing lands.

use super::harness::{Run, Sandbox, run};
use super::with_oneshot::{LIMIT, oneshot};
use crate::fake_model::{FakeModel, Reply};
use serde_json::{Value, json};
use std::process::Command;

/// `git ARGS…` in the sandbox's work directory; its trimmed stdout.
fn git(sb: &Sandbox, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(sb.work())
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// `oneshot job ARGS…` with the Claude CLI reachable.
fn job(sb: &Sandbox, claude: &Command, args: &[&str]) -> Run {
    let mut c = oneshot(sb, &[claude]);
    c.env("ONESHOT_ACTOR", "tester")
        .env("NO_COLOR", "1")
        .arg("job")
        .args(args);
    run(c, LIMIT)
}

/// [`job`], insisting on exit 0; its stdout.
fn ok(sb: &Sandbox, claude: &Command, args: &[&str]) -> String {
    let r = job(sb, claude, args);
    assert_eq!(r.code(), Some(0), "{args:?}: {}", r.dump());
    r.stdout
}

/// A job whose worker wrote `text` as `a.txt`'s one line, stepped and approved: SUCCESS.
fn success(sb: &Sandbox, claude: &Command, text: &str) -> String {
    let worker = format!("sh -c 'printf \"{text}\\n\" > a.txt'");
    let task = format!("write {text} to a.txt");
    let id = ok(
        sb,
        claude,
        &[
            "create",
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            "echo VERDICT: DONE",
            "--activate",
            &task,
        ],
    )
    .trim()
    .to_string();
    ok(sb, claude, &["step", &id]);
    ok(sb, claude, &["approve", &id]);
    id
}

fn show(sb: &Sandbox, claude: &Command, id: &str) -> Value {
    serde_json::from_str(&ok(sb, claude, &["show", id, "--json"])).unwrap()
}

/// What the resolver answers: `a.txt` merged.
fn report() -> Value {
    json!({"all_resolved": true, "confidence": 0.9, "summary": "kept both lines",
           "files": [{"path": "a.txt", "action": "merged",
                      "description": "both jobs' lines kept"}]})
}

/// The sandbox's repository (`a.txt` = `a`), two jobs that rewrote its one line (`one`,
/// `three`), the first landed; the model, Claude, the second job and main after the first land.
fn conflicted() -> Option<(Sandbox, FakeModel, Command, String, String)> {
    let sb = Sandbox::new();
    git(&sb, &["init", "-q", "-b", "main"]);
    std::fs::write(sb.work().join("a.txt"), "a\n").unwrap();
    git(&sb, &["add", "-A"]);
    git(&sb, &["commit", "-qm", "a"]);
    let model = FakeModel::start();
    let claude = super::claude::claude(&sb, &model)?;
    let first = success(&sb, &claude, "one");
    let second = success(&sb, &claude, "three");
    ok(&sb, &claude, &["land", &first]);
    let main = git(&sb, &["rev-parse", "main"]);
    Some((sb, model, claude, second, main))
}

#[test]
fn claude_resolves_the_conflict_by_editing_the_worktree_and_the_job_lands() {
    let Some((sb, model, claude, second, main)) = conflicted() else {
        return;
    };
    let worktree = show(&sb, &claude, &second)["job"]["workspace"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let file = std::path::Path::new(&worktree).join("a.txt");
    // Claude reads the conflicted file (its Write refuses a file it has not read), writes the
    // merge, and answers through its StructuredOutput tool.
    model.push(Reply::Call {
        name: "Read".into(),
        args: json!({"file_path": file.display().to_string()}),
    });
    model.push(Reply::Write {
        path: file.display().to_string(),
        content: "one\nthree\n".into(),
    });
    model.push(Reply::Json(report()));

    let r = job(&sb, &claude, &["land", &second, "--resolver", "claude"]);
    let said = |r: &Run| {
        let reqs = model.model_requests();
        let last = reqs.last().map(|q| q.body_text()).unwrap_or_default();
        format!(
            "{}\n--- the model was last told\n{}",
            r.dump(),
            &last[last.len().saturating_sub(3000)..]
        )
    };
    assert_eq!(r.code(), Some(0), "{}", said(&r));
    assert!(
        r.stdout.contains(&format!("{second}: landed into main")),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("refused"), "{}", r.dump());
    // main fast-forwarded by the rebased commit, whose a.txt is the resolution.
    assert_eq!(git(&sb, &["rev-parse", "main~1"]), main);
    assert_eq!(git(&sb, &["show", "main:a.txt"]), "one\nthree");
    assert_eq!(show(&sb, &claude, &second)["job"]["state"], "SUCCESS");
    // The question named the conflicted file and offered the schema; the Write went through.
    let reqs = model.model_requests();
    assert!(reqs[0].count("conflicts in: a.txt") >= 1, "{reqs:?}");
    assert!(reqs[0].tool_names().iter().any(|t| t == "StructuredOutput"));
    let last = reqs.last().unwrap().body_text();
    assert!(
        !last.contains("the auditor judges the work"),
        "the Write was refused: {last}"
    );
}

#[test]
fn a_claude_resolver_leaving_the_markers_is_refused_and_nothing_lands() {
    let Some((sb, model, claude, second, main)) = conflicted() else {
        return;
    };
    // It answers "merged" without touching the file.
    model.push(Reply::Json(report()));

    let r = job(&sb, &claude, &["land", &second, "--resolver", "claude"]);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(
        r.stdout.contains("a.txt: conflict markers left"),
        "{}",
        r.dump()
    );
    assert_eq!(git(&sb, &["rev-parse", "main"]), main, "the base moved");
    assert_eq!(git(&sb, &["show", "main:a.txt"]), "one");
    let shown = show(&sb, &claude, &second);
    assert_eq!(shown["job"]["state"], "INTERVENTION_REQUIRED");
    assert_eq!(shown["job"]["cause"]["failure"]["kind"], "unresolved");
    assert_eq!(model.model_requests().len(), 1);
}
