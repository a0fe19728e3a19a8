//! Branches named from the task (`oneshot/<slug>-<short id>`, or a namer's suggestion with a
//! nickname) and overlapping jobs flagged in `job list` / `job show`. Through the real binary
//! on real repositories; the namers here are command lines (the real agent CLIs answer in
//! tests/agents/namer.rs).

use crate::job_env;
use job_env::{DONE, Env, git};
use serde_json::Value;

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `job list --json`'s rows.
fn rows(env: &Env) -> Vec<Value> {
    env.ok(&["job", "list", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_default_branch_is_named_from_the_task_and_the_work_lands_on_it() {
    let env = Env::new();
    let id = env.ok(&[
        "job",
        "create",
        "--worker-cmd",
        "sh -c 'echo hi > f.txt'",
        "--auditor-cmd",
        DONE,
        "--activate",
        "Add a --json flag to `list` (see #12)\nand more words below",
    ]);
    let id = id.trim();
    let short = &id["job-".len()..];
    let branch = env.branch(id);
    assert_eq!(
        branch,
        format!("oneshot/add-a-json-flag-to-list-see-12-{short}")
    );
    // Chosen at create, before any workspace exists; the step provisions that branch.
    assert!(env.show(id)["job"]["workspace"].is_null());
    env.ok(&["job", "run"]);
    let v = env.show(id);
    assert_eq!(v["job"]["state"], "APPROVAL_REQUIRED", "{v}");
    assert_eq!(v["job"]["workspace"]["branch"], branch.as_str());
    assert_eq!(
        git(&env.repo(), &["show", &format!("{branch}:f.txt")]),
        "hi"
    );
    // `job show` says it; no nickname without a namer.
    let shown = env.ok(&["job", "show", id]);
    assert!(
        shown.contains(&format!("  branch:   {branch}\n")),
        "{shown}"
    );
    assert!(!shown.contains("nickname:"), "{shown}");
    assert_eq!(rows(&env)[0]["nickname"], Value::Null);

    // A task without an ASCII word: the job id names the branch.
    let id = env.create("true", DONE, &[]);
    let other = env.ok(&[
        "job",
        "create",
        "--worker-cmd",
        "true",
        "--auditor-cmd",
        DONE,
        "修正",
    ]);
    let other = other.trim();
    assert_ne!(other, id);
    assert_eq!(env.branch(other), format!("oneshot/{other}"));
}

/// Writes `answer` as a namer's command line: it reads the prompt, keeps it, prints `answer`.
fn namer(env: &Env, name: &str, answer: &str) -> String {
    let script = env.dir.path().join(format!("{name}.sh"));
    let prompt = env.dir.path().join(format!("{name}.prompt"));
    std::fs::write(
        &script,
        format!("cat > '{}'\nprintf '%s\\n' '{answer}'\n", prompt.display()),
    )
    .unwrap();
    format!("cmd:sh {}", script.display())
}

#[test]
fn a_namer_names_the_branch_and_the_nickname_shows_in_the_list() {
    let env = Env::new();
    let cmd = namer(
        &env,
        "good",
        r#"{"branch": "feature/json-flag", "nickname": "JSON   flag"}"#,
    );
    let out = env.oneshot(&[
        "job",
        "create",
        "--worker-cmd",
        "true",
        "--auditor-cmd",
        DONE,
        "--namer",
        &cmd,
        "add a --json flag; the key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("namer"),
        "{}",
        text(&out)
    );
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let short = &id["job-".len()..];
    assert_eq!(
        env.branch(&id),
        format!("oneshot/feature/json-flag-{short}")
    );
    let v = env.show(&id);
    assert_eq!(v["job"]["spec"]["nickname"], "JSON flag", "{v}");
    // The namer was asked with the task as the agents get it: without its secret.
    let asked = std::fs::read_to_string(env.dir.path().join("good.prompt")).unwrap();
    assert!(asked.contains("add a --json flag"), "{asked}");
    assert!(!asked.contains("abcdefghijklmnop"), "{asked}");
    // `job list` shows the nickname beside the task, and `--json` has it.
    let list = env.ok(&["job", "list"]);
    let line = list.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(line.contains("[JSON flag] add a --json flag"), "{list}");
    assert_eq!(rows(&env)[0]["nickname"], "JSON flag");
    assert!(
        env.ok(&["job", "show", &id])
            .contains("  nickname: JSON flag\n")
    );

    // From oneshot.toml: the same.
    std::fs::write(
        env.repo().join("oneshot.toml"),
        format!(
            "namer = {:?}\n",
            namer(&env, "file", r#"{"branch": "fix/x", "nickname": "X"}"#)
        ),
    )
    .unwrap();
    git(&env.repo(), &["add", "oneshot.toml"]);
    git(&env.repo(), &["commit", "-qm", "namer"]);
    let id = env.create("true", DONE, &[]);
    assert_eq!(
        env.branch(&id),
        format!("oneshot/fix/x-{}", &id["job-".len()..])
    );
    // It runs on that branch.
    env.ok(&["job", "activate", &id]);
    env.ok(&["job", "run"]);
    assert_eq!(
        env.show(&id)["job"]["workspace"]["branch"],
        env.branch(&id).as_str()
    );
}

#[test]
fn a_namer_that_fails_leaves_the_branch_named_from_the_task_with_a_warning() {
    let env = Env::new();
    let cases = [
        (
            namer(
                &env,
                "badref",
                r#"{"branch": "fix..parser", "nickname": "Parser"}"#,
            ),
            "is not a valid branch name",
        ),
        (
            namer(&env, "prose", "no JSON here"),
            "the namer did not answer",
        ),
        ("cmd:false".to_string(), "the namer did not answer"),
        ("claudee".to_string(), "did you mean claude?"),
    ];
    for (cmd, why) in cases {
        let out = env.oneshot(&[
            "job",
            "create",
            "--worker-cmd",
            "true",
            "--auditor-cmd",
            DONE,
            "--namer",
            &cmd,
            "fix the parser",
        ]);
        assert!(out.status.success(), "{cmd}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let slug = format!("oneshot/fix-the-parser-{}", &id["job-".len()..]);
        assert!(
            err.starts_with(&format!(
                "oneshot: warning: the namer {cmd} (--namer) gave no branch name"
            )),
            "{cmd}: {err}"
        );
        assert!(err.contains(why), "{cmd}: {err}");
        assert!(
            err.contains(&format!("the branch is {slug}, named from the task")),
            "{err}"
        );
        assert_eq!(env.branch(&id), slug);
        assert!(env.show(&id)["job"]["spec"]["nickname"].is_null());
    }
}

/// A job whose worker writes `content` to `file`, run to APPROVAL_REQUIRED.
fn job_writing(env: &Env, file: &str, content: &str) -> String {
    let worker = format!("sh -c 'echo {content} > {file}'");
    let id = env.create(&worker, DONE, &["--activate"]);
    env.ok(&["job", "run"]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    id
}

#[test]
fn jobs_changing_the_same_file_are_flagged_and_others_are_not() {
    let env = Env::new();
    let one = job_writing(&env, "shared.txt", "one");
    let two = job_writing(&env, "shared.txt", "two");
    let three = job_writing(&env, "other.txt", "three");
    // A job not run yet changed nothing: never flagged.
    let draft = env.create("true", DONE, &[]);

    let list = env.ok(&["job", "list"]);
    let line = |id: &str| {
        list.lines()
            .find(|l| l.starts_with(id))
            .unwrap()
            .to_string()
    };
    assert!(line(&one).ends_with(&format!("⚠ overlaps {two}")), "{list}");
    assert!(line(&two).ends_with(&format!("⚠ overlaps {one}")), "{list}");
    assert!(!line(&three).contains('⚠'), "{list}");
    assert!(!line(&draft).contains('⚠'), "{list}");

    let by_id: std::collections::BTreeMap<String, Value> = rows(&env)
        .into_iter()
        .map(|r| (r["job_id"].as_str().unwrap().to_string(), r))
        .collect();
    assert_eq!(
        by_id[&one]["overlaps"],
        serde_json::json!([{"job_id": two, "files": ["shared.txt"]}])
    );
    assert_eq!(
        by_id[&two]["overlaps"],
        serde_json::json!([{"job_id": one, "files": ["shared.txt"]}])
    );
    assert_eq!(by_id[&three]["overlaps"], serde_json::json!([]));

    // `job show` names each overlapping job with the shared files; `--state` filters what
    // is listed, not what counts.
    let shown = env.ok(&["job", "show", &one]);
    assert!(
        shown.contains(&format!("  ⚠ {two}: shared.txt\n")),
        "{shown}"
    );
    assert_eq!(
        env.show(&two)["overlaps"],
        serde_json::json!([{"job_id": one, "files": ["shared.txt"]}])
    );
    assert!(env.show(&three)["overlaps"].as_array().unwrap().is_empty());
    let approved = env.ok(&["job", "list", "--state", "approval_required"]);
    assert!(
        approved.contains(&format!("⚠ overlaps {two}")),
        "{approved}"
    );

    // An approved job still counts; a canceled one no longer does.
    env.ok(&["job", "approve", &one]);
    assert_eq!(env.show(&two)["overlaps"][0]["job_id"], one.as_str());
    env.ok(&["job", "cancel", &two]);
    let list = env.ok(&["job", "list"]);
    assert!(!list.contains('⚠'), "{list}");
    assert!(env.show(&one)["overlaps"].as_array().unwrap().is_empty());
}
