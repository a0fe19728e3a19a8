//! A job whose source is a git remote (`job create --remote`), through the real binary: a bare
//! repository is the remote, and two "machines" — each its own HOME and `--state-dir`, both
//! pointing `--store` at one SQLite file — share nothing else. The work travels through the
//! remote: one machine runs the step and pushes the branch, the other diffs it, steps it again
//! from the pushed branch, and lands it into the remote's main.

use std::path::Path;
use std::process::Command;

use crate::fleet;
use fleet::{Machine, git, repo};

/// The auditor that says done.
const DONE: &str = "echo VERDICT: DONE";

/// The world: a bare repository (cloned from a repository with `a.txt` on main), the job
/// store, and the machines' directories.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let src = repo(dir.path());
        git(
            dir.path(),
            &[
                "clone",
                "-q",
                "--bare",
                &src.display().to_string(),
                "remote.git",
            ],
        );
        World { dir }
    }

    fn remote(&self) -> String {
        self.dir.path().join("remote.git").display().to_string()
    }

    fn machine(&self, name: &str) -> Machine {
        let store = self.dir.path().join("jobs.db");
        Machine::at(
            name,
            self.dir.path().join(name),
            &store.display().to_string(),
        )
    }

    /// What the remote's `rev` holds in `file` (`git show`), or `None`.
    fn remote_file(&self, rev: &str, file: &str) -> Option<String> {
        let out = Command::new("git")
            .args(["show", &format!("{rev}:{file}")])
            .current_dir(self.dir.path().join("remote.git"))
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// A worker that appends `text` to `f.txt`.
fn appends(text: &str) -> String {
    format!("sh -c 'printf \"{text}\\n\" >> f.txt'")
}

/// A job on the world's remote, created on `m` and PENDING.
fn create(w: &World, m: &Machine, worker: &str) -> String {
    let id = m
        .ok(&[
            "job",
            "create",
            "--remote",
            &w.remote(),
            "--worker-cmd",
            worker,
            "--auditor-cmd",
            DONE,
            "--activate",
            "append to f.txt",
        ])
        .trim()
        .to_owned();
    assert!(id.starts_with("job-"), "{id}");
    id
}

#[test]
fn a_remote_job_runs_on_one_machine_and_is_diffed_and_landed_from_another() {
    let w = World::new();
    let (m1, m2) = (w.machine("m1"), w.machine("m2"));
    let id = create(&w, &m1, &appends("hi"));
    let spec = &m1.show(&id)["job"]["spec"];
    assert_eq!(spec["remote"].as_str(), Some(w.remote().as_str()));
    assert_eq!(spec["source"].as_str(), Some("."));
    assert_eq!(
        spec["base"].as_str(),
        Some("main"),
        "the remote's default branch"
    );
    let branch = spec["branch"].as_str().unwrap().to_owned();

    m1.ok(&["job", "run"]);
    assert_eq!(m1.state(&id), "APPROVAL_REQUIRED");
    assert_eq!(
        w.remote_file(&branch, "f.txt").as_deref(),
        Some("hi\n"),
        "harvest pushed the job's branch to the remote"
    );
    let ws = m1.show(&id)["job"]["workspace"].clone();
    assert!(
        Path::new(ws["path"].as_str().unwrap()).starts_with(m1.state_dir()),
        "{ws}"
    );

    // Machine 2 never ran it: its diff comes from the remote.
    let diff = m2.ok(&["job", "diff", &id]);
    assert!(
        diff.contains("+++ b/f.txt") && diff.contains("+hi"),
        "{diff}"
    );
    assert!(m2.state_dir().join("mirrors").is_dir());
    assert!(!m2.state_dir().join("worktrees").join(&id).exists());

    // main moves on meanwhile (another change pushed): the land rebases onto it.
    let clone = w.dir.path().join("clone");
    git(
        w.dir.path(),
        &["clone", "-q", &w.remote(), &clone.display().to_string()],
    );
    std::fs::write(clone.join("b.txt"), "b\n").unwrap();
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-qm", "b"]);
    git(&clone, &["push", "-q", "origin", "main"]);

    m2.ok(&["job", "approve", &id]);
    let landed = m2.ok(&["job", "land", &id]);
    assert!(landed.contains("landed into main"), "{landed}");
    assert_eq!(w.remote_file("main", "f.txt").as_deref(), Some("hi\n"));
    assert_eq!(w.remote_file("main", "b.txt").as_deref(), Some("b\n"));
    assert_eq!(
        git(&w.dir.path().join("remote.git"), &["rev-parse", "main"]),
        git(&w.dir.path().join("remote.git"), &["rev-parse", &branch]),
        "the rebased job branch was pushed with main"
    );
    assert!(m2.show(&id)["job"]["landed"].is_object());
    // Machine 1's worktree goes: its work is on the remote.
    let wt = m1.state_dir().join("worktrees").join(&id);
    assert!(wt.is_dir());
    m1.ok(&["job", "cleanup", &id]);
    assert!(!wt.exists(), "cleanup removed {}", wt.display());
}

#[test]
fn a_step_on_another_machine_starts_from_the_pushed_branch() {
    let w = World::new();
    let (m1, m2) = (w.machine("m1"), w.machine("m2"));
    let id = create(&w, &m1, &appends("more"));
    m1.ok(&["job", "run"]);
    let branch = m1.show(&id)["job"]["spec"]["branch"]
        .as_str()
        .unwrap()
        .to_owned();
    let base = m1.show(&id)["job"]["workspace"]["base_commit"].clone();
    m1.ok(&["job", "reject", &id, "--feedback", "again"]);
    // Machine 2 takes the next step: its worktree starts from the first step's commit.
    m2.ok(&["job", "run"]);
    assert_eq!(m2.state(&id), "APPROVAL_REQUIRED");
    assert_eq!(
        w.remote_file(&branch, "f.txt").as_deref(),
        Some("more\nmore\n"),
        "the second step appended to the first step's work"
    );
    let ws = m2.show(&id)["job"]["workspace"].clone();
    assert_eq!(ws["base_commit"], base, "the same base on both machines");
    assert!(
        Path::new(ws["path"].as_str().unwrap()).starts_with(m2.state_dir()),
        "{ws}"
    );
    let wt = m2.state_dir().join("worktrees").join(&id);
    assert_eq!(
        std::fs::read_to_string(wt.join("f.txt")).unwrap(),
        "more\nmore\n"
    );
}

#[test]
fn a_conflicting_land_leaves_the_remote_untouched() {
    let w = World::new();
    let (m1, m2) = (w.machine("m1"), w.machine("m2"));
    let id = create(&w, &m1, &appends("job"));
    m1.ok(&["job", "run"]);
    m1.ok(&["job", "approve", &id]);
    let clone = w.dir.path().join("clone");
    git(
        w.dir.path(),
        &["clone", "-q", &w.remote(), &clone.display().to_string()],
    );
    std::fs::write(clone.join("f.txt"), "theirs\n").unwrap();
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-qm", "theirs"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    let bare = w.dir.path().join("remote.git");
    let (main, branch) = (
        git(&bare, &["rev-parse", "main"]),
        m1.show(&id)["job"]["spec"]["branch"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    let tip = git(&bare, &["rev-parse", &branch]);
    let out = m2.run(&["job", "land", &id]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(m2.state(&id), "INTERVENTION_REQUIRED");
    assert_eq!(git(&bare, &["rev-parse", "main"]), main);
    assert_eq!(git(&bare, &["rev-parse", &branch]), tip);
}

#[test]
fn a_remote_that_does_not_answer_or_holds_a_password_is_refused_at_create() {
    let w = World::new();
    let m = w.machine("m");
    let missing = w.dir.path().join("nowhere.git").display().to_string();
    let out = m.run(&[
        "job",
        "create",
        "--remote",
        &missing,
        "--worker-cmd",
        "true",
        "--auditor-cmd",
        DONE,
        "task",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("nowhere.git") && err.contains("git ls-remote"),
        "{err}"
    );

    let out = m.run(&[
        "job",
        "create",
        "--remote",
        "https://ann:hunter2@127.0.0.1:9/r.git",
        "--worker-cmd",
        "true",
        "--auditor-cmd",
        DONE,
        "task",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    assert!(err.contains("credential helper"), "{err}");

    let out = m.run(&[
        "job",
        "create",
        "--remote",
        &w.remote(),
        "--base",
        "no-such-branch",
        "--worker-cmd",
        "true",
        "--auditor-cmd",
        DONE,
        "task",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("no branch no-such-branch"), "{err}");
    assert!(m.ok(&["job", "list"]).trim().is_empty(), "no job was made");
}
