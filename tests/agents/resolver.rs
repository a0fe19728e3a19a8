//! `job land --resolver claude`: the real Claude CLI, against the fake model server, resolves a
//! rebase's conflict mid-rebase by writing the merged file in the job's worktree (the built-in
//! rule lets a resolver edit there, and only there) and answering with the `conflict-resolve`
//! schema; the land goes on. A resolver that answers without touching the markers is refused
//! and nothing lands; so is one whose Write outside the worktree was refused, and one whose
//! Write the job's policy refused (its `permit`, asked as a worker, answers in place of the
//! built-in rule).

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
/// `extra`: more `job create` options.
fn success(sb: &Sandbox, claude: &Command, text: &str, extra: &[&str]) -> String {
    let worker = format!("sh -c 'printf \"{text}\\n\" > a.txt'");
    let task = format!("write {text} to a.txt");
    let mut args = vec![
        "create",
        "--worker-cmd",
        &worker,
        "--auditor-cmd",
        "echo VERDICT: DONE",
        "--activate",
    ];
    args.extend_from_slice(extra);
    args.push(&task);
    let id = ok(sb, claude, &args).trim().to_string();
    ok(sb, claude, &["step", &id]);
    ok(sb, claude, &["approve", &id]);
    id
}

fn show(sb: &Sandbox, claude: &Command, id: &str) -> Value {
    serde_json::from_str(&ok(sb, claude, &["show", id, "--json"])).unwrap()
}

/// The job's worktree.
fn worktree(sb: &Sandbox, claude: &Command, id: &str) -> std::path::PathBuf {
    let shown = show(sb, claude, id);
    shown["job"]["workspace"]["path"].as_str().unwrap().into()
}

/// Claude's Read of `file`, then its Write of `content` there (its Write refuses to overwrite
/// a file it has not read).
fn read_and_write(model: &FakeModel, file: &std::path::Path, content: &str) {
    model.push(Reply::Call {
        name: "Read".into(),
        args: json!({"file_path": file.display().to_string()}),
    });
    model.push(Reply::Write {
        path: file.display().to_string(),
        content: content.into(),
    });
}

/// What the resolver answers: `a.txt` merged.
fn report() -> Value {
    json!({"all_resolved": true, "confidence": 0.9, "summary": "kept both lines",
           "files": [{"path": "a.txt", "action": "merged",
                      "description": "both jobs' lines kept"}]})
}

/// The sandbox's repository (`a.txt` = `a`), two jobs that rewrote its one line (`one`,
/// `three`; the second made with `extra` options), the first landed; the model, Claude, the
/// second job and main after the first land.
fn conflicted(extra: &[&str]) -> Option<(Sandbox, FakeModel, Command, String, String)> {
    let sb = Sandbox::new();
    git(&sb, &["init", "-q", "-b", "main"]);
    std::fs::write(sb.work().join("a.txt"), "a\n").unwrap();
    git(&sb, &["add", "-A"]);
    git(&sb, &["commit", "-qm", "a"]);
    let model = FakeModel::start();
    let claude = super::claude::claude(&sb, &model)?;
    let first = success(&sb, &claude, "one", &[]);
    let second = success(&sb, &claude, "three", extra);
    ok(&sb, &claude, &["land", &first]);
    let main = git(&sb, &["rev-parse", "main"]);
    Some((sb, model, claude, second, main))
}

#[test]
fn claude_resolves_the_conflict_by_editing_the_worktree_and_the_job_lands() {
    let Some((sb, model, claude, second, main)) = conflicted(&[]) else {
        return;
    };
    // Claude reads the conflicted file, writes the merge, and answers through its
    // StructuredOutput tool.
    let file = worktree(&sb, &claude, &second).join("a.txt");
    read_and_write(&model, &file, "one\nthree\n");
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
    let Some((sb, model, claude, second, main)) = conflicted(&[]) else {
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

/// The built-in rule: a Write outside the worktree (the user's own checkout) is refused, the
/// model reads why, and the file is untouched; the markers are left, so nothing lands.
#[test]
fn a_claude_resolver_writing_outside_the_worktree_is_refused() {
    let Some((sb, model, claude, second, main)) = conflicted(&[]) else {
        return;
    };
    let outside = sb.work().join("a.txt");
    read_and_write(&model, &outside, "one\nthree\n");
    model.push(Reply::Json(report()));

    let r = job(&sb, &claude, &["land", &second, "--resolver", "claude"]);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let why = format!(
        "refused the resolver's Write request: {} is outside {}",
        outside.display(),
        // As the record keeps it, less a trailing slash.
        worktree(&sb, &claude, &second)
            .display()
            .to_string()
            .trim_end_matches('/')
    );
    assert!(r.stderr.contains(&why), "{why}\n{}", r.dump());
    assert!(model.model_requests()[2].body_text().contains("is outside"));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "one\n");
    assert_eq!(git(&sb, &["rev-parse", "main"]), main, "the base moved");
    assert!(
        r.stdout.contains("a.txt: conflict markers left"),
        "{}",
        r.dump()
    );
}

/// A job with a policy: its `permit` answers the resolver's tool requests, asked as a worker,
/// in place of the built-in rule (which would have let this Write through).
#[test]
fn the_jobs_policy_permit_answers_the_resolvers_requests() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("guard.lua");
    std::fs::write(
        &policy,
        r#"return {
  permit = function(tool, input, ctx, role)
    if tool == "Write" then
      return "deny", "no writes for the " .. role .. " zq91"
    end
    return "allow"
  end,
}"#,
    )
    .unwrap();
    let policy = policy.display().to_string();
    let Some((sb, model, claude, second, main)) = conflicted(&["--policy", &policy]) else {
        return;
    };
    let file = worktree(&sb, &claude, &second).join("a.txt");
    read_and_write(&model, &file, "one\nthree\n");
    model.push(Reply::Json(report()));

    let r = job(&sb, &claude, &["land", &second, "--resolver", "claude"]);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(
        r.stderr
            .contains("refused the resolver's Write request: no writes for the worker zq91"),
        "{}",
        r.dump()
    );
    assert!(std::fs::read_to_string(&file).unwrap_or_default() != "one\nthree\n");
    assert_eq!(git(&sb, &["rev-parse", "main"]), main, "the base moved");
}
