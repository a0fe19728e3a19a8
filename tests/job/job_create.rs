//! `oneshot job create`: its settings from the source's `oneshot.toml`, the user's config and
//! the environment (as `oneshot run` reads them), and a source with uncommitted changes —
//! refused unless told what to do with them. Through the real binary and a real repository.

use std::path::Path;

use crate::job_env;
use job_env::{DONE, Env, GOOD_WORKER, git};

/// Runs `cmd` and insists on exit 0; its stdout.
fn ok(mut cmd: std::process::Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Writes `oneshot.toml` in the repository and commits it (a clean source).
fn project_file(env: &Env, text: &str) {
    std::fs::write(env.repo().join("oneshot.toml"), text).unwrap();
    git(&env.repo(), &["add", "oneshot.toml"]);
    git(&env.repo(), &["commit", "-qm", "oneshot.toml"]);
}

fn toml_str(s: &str) -> String {
    format!("{s:?}")
}

#[test]
fn a_job_made_from_oneshot_toml_alone_runs_to_completion() {
    let env = Env::new();
    project_file(
        &env,
        &format!(
            "worker-cmd = {}\nauditor-cmd = {}\n",
            toml_str(GOOD_WORKER),
            toml_str(DONE)
        ),
    );
    // Created from elsewhere: the file that counts is the source's, not the current
    // directory's (which has one of its own, naming players that would fail).
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(
        elsewhere.join("oneshot.toml"),
        "worker-cmd = \"false\"\nauditor-cmd = \"echo VERDICT: IMPOSSIBLE\"\n",
    )
    .unwrap();
    let repo = env.repo();
    let mut c = env.command(&[
        "job",
        "create",
        "--source",
        repo.to_str().unwrap(),
        "--activate",
        "write hi to f.txt",
    ]);
    c.current_dir(&elsewhere);
    let id = ok(c).trim().to_string();
    let job = env.show(&id);
    assert_eq!(job["job"]["spec"]["worker"], format!("cmd:{GOOD_WORKER}"));
    assert_eq!(job["job"]["spec"]["auditor"], format!("cmd:{DONE}"));
    env.ok(&["job", "run"]);
    // The built-in policy leaves a done result to a human.
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    let branch = env.branch(&id);
    assert_eq!(git(&repo, &["show", &format!("{branch}:f.txt")]), "hi");
}

#[test]
fn a_flag_beats_the_project_file_which_beats_the_user_file_which_beats_the_environment() {
    let env = Env::new();
    let policy = env.repo().join("p.lua");
    std::fs::write(&policy, "return {}\n").unwrap();
    git(&env.repo(), &["add", "p.lua"]);
    project_file(
        &env,
        "worker-cmd = \"sh project-worker.sh\"\npolicy = \"p.lua\"\n",
    );
    let user = env.config_home().join("oneshot");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("config.toml"),
        "worker-cmd = \"sh user-worker.sh\"\nauditor-cmd = \"sh user-auditor.sh\"\n",
    )
    .unwrap();
    let spec = |args: &[&str], user_file: bool| {
        let mut all = vec!["job", "create"];
        all.extend_from_slice(args);
        all.push("task");
        let mut c = env.command(&all);
        c.env("ONESHOT_WORKER_CMD", "sh env-worker.sh")
            .env("ONESHOT_AUDITOR_CMD", "sh env-auditor.sh");
        if !user_file {
            c.env("XDG_CONFIG_HOME", env.dir.path().join("no-config"));
        }
        let id = ok(c).trim().to_string();
        env.show(&id)["job"]["spec"].clone()
    };
    let s = spec(&[], true);
    assert_eq!(s["worker"], "cmd:sh project-worker.sh");
    assert_eq!(s["auditor"], "cmd:sh user-auditor.sh");
    // A path in a file is taken from the file's directory, and kept absolute.
    assert_eq!(
        s["policy"],
        policy.canonicalize().unwrap().to_str().unwrap()
    );
    let s = spec(&["--worker-cmd", "sh flag-worker.sh"], true);
    assert_eq!(s["worker"], "cmd:sh flag-worker.sh");
    // An agent flag beats a command line in the file: the role is one setting.
    let s = spec(&["--worker", "claude"], true);
    assert_eq!(s["worker"], "claude");
    let s = spec(&[], false);
    assert_eq!(s["auditor"], "cmd:sh env-auditor.sh");
    // A bad value says where it was given.
    project_file(&env, "worker = \"nosuchagent\"\n");
    let out = env.oneshot(&["job", "create", "--auditor-cmd", "true", "task"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("worker in ") && err.contains("oneshot.toml:1") && err.contains("nosuchagent"),
        "{err}"
    );
}

#[test]
fn without_a_worker_the_error_names_every_way_to_give_one() {
    let env = Env::new();
    let out = env.oneshot(&["job", "create", "--auditor-cmd", "true", "task"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for part in [
        "needs a worker",
        "--worker AGENT",
        "--worker-cmd CMDLINE",
        "`worker` / `worker-cmd` in the oneshot.toml",
        "no oneshot.toml at or above",
        "ONESHOT_WORKER / ONESHOT_WORKER_CMD",
    ] {
        assert!(err.contains(part), "{part} missing from {err}");
    }
    let out = env.oneshot(&["job", "create", "--worker-cmd", "true", "task"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs an auditor") && err.contains("--auditor-cmd"),
        "{err}"
    );
    assert!(env.ok(&["job", "list"]).trim().is_empty());
}

/// Everything about the user's checkout a job must not change: the branch, HEAD, the index
/// (every entry's mode, blob and path), what `git status` says, and the changed files'
/// contents.
fn checkout(repo: &Path) -> (String, String, String, String, Vec<u8>, Vec<u8>) {
    let status = git(repo, &["status", "--porcelain", "--untracked-files=all"]);
    (
        git(repo, &["symbolic-ref", "HEAD"]),
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["ls-files", "--stage"]),
        status,
        std::fs::read(repo.join("a.txt")).unwrap(),
        std::fs::read(repo.join("new.txt")).unwrap(),
    )
}

/// A repository with a tracked edit (`a.txt`, partly staged), a staged new file (`s.txt`),
/// untracked files (`new.txt`, `u1`…`u5`) and an ignored one (`x.log`).
fn dirty(env: &Env) -> std::path::PathBuf {
    let repo = env.repo();
    std::fs::write(repo.join(".gitignore"), "*.log\n").unwrap();
    git(&repo, &["add", ".gitignore"]);
    git(&repo, &["commit", "-qm", "ignore logs"]);
    std::fs::write(repo.join("a.txt"), "a\nstaged\n").unwrap();
    git(&repo, &["add", "a.txt"]);
    std::fs::write(repo.join("a.txt"), "a\nstaged\nedited\n").unwrap();
    std::fs::write(repo.join("s.txt"), "staged file\n").unwrap();
    git(&repo, &["add", "s.txt"]);
    std::fs::write(repo.join("new.txt"), "untracked\n").unwrap();
    for i in 1..=5 {
        std::fs::write(repo.join(format!("u{i}")), "u\n").unwrap();
    }
    std::fs::write(repo.join("x.log"), "ignored\n").unwrap();
    repo
}

#[test]
fn a_source_with_uncommitted_changes_is_refused_naming_them_and_both_ways_out() {
    let env = Env::new();
    let repo = dirty(&env);
    let before = checkout(&repo);
    let out = env.oneshot(&[
        "job",
        "create",
        "--worker-cmd",
        GOOD_WORKER,
        "--auditor-cmd",
        DONE,
        "task",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let source = repo.canonicalize().unwrap();
    for part in [
        format!("the source {} has uncommitted changes", source.display()),
        "a.txt".into(),
        "s.txt".into(),
        "new.txt".into(),
        "and 3 more".into(),
        "--include-uncommitted".into(),
        "--from-head".into(),
    ] {
        assert!(err.contains(&part), "{part} missing from {err}");
    }
    assert!(!err.contains("x.log"), "an ignored file counted: {err}");
    assert!(env.ok(&["job", "list"]).trim().is_empty());
    assert_eq!(checkout(&repo), before);
    // An explicit base needs neither flag.
    env.create(GOOD_WORKER, DONE, &["--base", "HEAD"]);
}

#[test]
fn include_uncommitted_starts_the_job_from_them_without_touching_the_checkout() {
    let env = Env::new();
    let repo = dirty(&env);
    let before = checkout(&repo);
    let out = env.oneshot(&[
        "job",
        "create",
        "--worker-cmd",
        GOOD_WORKER,
        "--auditor-cmd",
        DONE,
        "--include-uncommitted",
        "--activate",
        "write hi to f.txt",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(checkout(&repo), before, "job create changed the checkout");
    let base_ref = format!("refs/oneshot/base/{id}");
    let base = git(&repo, &["rev-parse", &base_ref]);
    assert_eq!(env.show(&id)["job"]["spec"]["base"], base.as_str());
    assert_eq!(git(&repo, &["rev-parse", &format!("{base}^")]), before.1);
    env.ok(&["job", "run"]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    assert_eq!(checkout(&repo), before, "the step changed the checkout");
    let branch = env.branch(&id);
    let show = |file: &str| git(&repo, &["show", &format!("{branch}:{file}")]);
    assert_eq!(show("a.txt"), "a\nstaged\nedited");
    assert_eq!(show("s.txt"), "staged file");
    assert_eq!(show("new.txt"), "untracked");
    assert_eq!(show("f.txt"), "hi");
    let ignored = std::process::Command::new("git")
        .args(["cat-file", "-e", &format!("{branch}:x.log")])
        .current_dir(&repo)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!ignored.success(), "an ignored file went into the base");
    // The job's work is measured from that base: only what the worker did.
    assert_eq!(
        env.show(&id)["job"]["workspace"]["base_commit"],
        base.as_str()
    );
    assert_eq!(
        git(&repo, &["diff", "--name-only", &base, &branch]),
        "f.txt"
    );
    // A job canceled before its step lets its base go at cleanup.
    let out = env.oneshot(&[
        "job",
        "create",
        "--worker-cmd",
        GOOD_WORKER,
        "--auditor-cmd",
        DONE,
        "--include-uncommitted",
        "task",
    ]);
    assert!(out.status.success());
    let other = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let other_ref = format!("refs/oneshot/base/{other}");
    git(&repo, &["rev-parse", "--verify", &other_ref]);
    env.ok(&["job", "cancel", &other]);
    env.ok(&["job", "cleanup", &other]);
    assert_eq!(git(&repo, &["for-each-ref", &other_ref]), "");
    assert_eq!(checkout(&repo), before);
}

#[test]
fn from_head_leaves_the_uncommitted_changes_out() {
    let env = Env::new();
    let repo = dirty(&env);
    let before = checkout(&repo);
    let id = env.create(GOOD_WORKER, DONE, &["--from-head", "--activate"]);
    env.ok(&["job", "run"]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    let branch = env.branch(&id);
    assert_eq!(git(&repo, &["show", &format!("{branch}:a.txt")]), "a");
    assert_eq!(git(&repo, &["rev-parse", &format!("{branch}^")]), before.1);
    let files = git(&repo, &["diff", "--name-only", &before.1, &branch]);
    assert_eq!(files, "f.txt");
    assert_eq!(checkout(&repo), before);
    // The flags exclude each other and an explicit base.
    let out = env.oneshot(&[
        "job",
        "create",
        "--worker-cmd",
        "true",
        "--auditor-cmd",
        "true",
        "--from-head",
        "--include-uncommitted",
        "task",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// The work is committed as the person who asked for it (the source's git identity), with
/// oneshot as the committer and the job, its step and session in trailers; without a git
/// identity, as the actor.
#[test]
fn the_work_is_committed_as_its_asker_with_the_job_in_trailers() {
    let env = Env::new();
    let repo = env.repo();
    git(&repo, &["config", "user.name", "Ana Lyst"]);
    git(&repo, &["config", "user.email", "ana@example.org"]);
    let id = env.create(GOOD_WORKER, DONE, &["--activate"]);
    env.ok(&["job", "run"]);
    let branch = env.branch(&id);
    let who = git(
        &repo,
        &["log", "-1", "--format=%an <%ae>|%cn <%ce>", &branch],
    );
    assert_eq!(
        who.trim(),
        "Ana Lyst <ana@example.org>|oneshot <oneshot@localhost>"
    );
    let body = git(&repo, &["log", "-1", "--format=%s%n%b", &branch]);
    assert!(body.starts_with("write hi to f.txt\n"), "{body}");
    let trailers = git(
        &repo,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=Job,key=Session,valueonly)",
            &branch,
        ],
    );
    assert!(trailers.contains(&format!("{id} (step 1)")), "{trailers}");
    assert!(
        !body.contains("Co-authored-by"),
        "a command worker is the user's own: {body}"
    );

    // No git identity (none in the repository, the machine's and the user's kept out): the
    // actor (ONESHOT_ACTOR in these tests).
    git(&repo, &["config", "--unset", "user.name"]);
    git(&repo, &["config", "--unset", "user.email"]);
    let out = env
        .command(&[
            "job",
            "create",
            "--worker-cmd",
            GOOD_WORKER,
            "--auditor-cmd",
            DONE,
        ])
        .args(["--activate", "write hi to f.txt"])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    env.ok(&["job", "run"]);
    let who = git(
        &repo,
        &["log", "-1", "--format=%an <%ae>", &env.branch(&id)],
    );
    assert_eq!(who.trim(), "tester <tester@localhost>");
}

#[test]
fn a_jobs_checks_run_in_its_sessions_before_the_auditor() {
    let env = Env::new();
    let runs = env.dir.path().join("runs");
    let audits = env.dir.path().join("audits");
    // Writes the right content only on its second run; the check sees the first was wrong.
    let worker = format!(
        "sh -c 'echo x >> {r}; if [ $(wc -l < {r}) -ge 2 ]; then echo hi > f.txt; else echo no > f.txt; fi'",
        r = runs.display()
    );
    let auditor = format!("sh -c 'echo x >> {}; echo VERDICT: DONE'", audits.display());
    let id = env.create(
        &worker,
        &auditor,
        &["--check", "grep -q hi f.txt", "--activate"],
    );
    assert_eq!(
        env.show(&id)["job"]["spec"]["checks"][0]["run"],
        "grep -q hi f.txt"
    );
    env.ok(&["job", "run"]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    let count = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count();
    assert_eq!(count(&runs), 2, "the failed check sent the worker back");
    assert_eq!(count(&audits), 1, "no auditor ran for the failed check");
}
