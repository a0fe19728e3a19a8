//! `oneshot.toml` and the user's `config.toml`: found from anywhere in the project, ranked
//! under the flags and over the environment, checked with file:line; `oneshot config` says
//! where each value came from; `oneshot init` writes a project that works; sessions are found
//! from the project wherever the state lives.

use crate::common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The binary run in `dir` with a private user config and state home, and no ONESHOT_* (so
/// the default, per-project state directory is used).
fn bare(w: &World, dir: &Path) -> Command {
    let mut c = w.cmd();
    c.env_remove("ONESHOT_STATE_DIR")
        .env("XDG_CONFIG_HOME", w.tmp.path().join("xdg-config"))
        .env("XDG_STATE_HOME", w.tmp.path().join("xdg-state"))
        .current_dir(dir);
    c
}

fn config_json(c: &mut Command) -> Value {
    let out = c.args(["config", "--json"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn flags_beat_the_project_file_which_beats_the_user_file_and_the_environment() {
    let w = World::new();
    let project = w.work();
    std::fs::create_dir_all(project.join("a/b")).unwrap();
    std::fs::write(
        project.join("oneshot.toml"),
        "# the project\nworker-cmd = \"sh fix.sh\"\nmax-iterations = 3\npolicy = \"pol/p.lua\"\n",
    )
    .unwrap();
    let user = w.tmp.path().join("xdg-config/oneshot");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("config.toml"),
        "max-iterations = 9\ntimeout = \"10m\"\n",
    )
    .unwrap();
    let v = config_json(
        bare(&w, &project.join("a/b"))
            .env("ONESHOT_MAX_ITERATIONS", "7")
            .env("ONESHOT_AUDITOR_CMD", "sh env-check.sh")
            .env("ONESHOT_HOOK_BUDGET", "1s")
            .args(["--worker-cmd", "sh flag.sh"]),
    );
    let root = project.canonicalize().unwrap();
    let file = root.join("oneshot.toml").display().to_string();
    let values = &v["values"];
    assert_eq!(v["project_file"], file.as_str());
    assert_eq!(values["worker-cmd"]["value"], "sh flag.sh");
    assert_eq!(values["worker-cmd"]["from"], "--worker-cmd");
    assert_eq!(values["max-iterations"]["value"], "3");
    assert_eq!(values["max-iterations"]["from"], format!("{file}:3"));
    // Relative to the file's directory, not to where oneshot ran.
    assert_eq!(
        values["policy"]["value"],
        root.join("pol/p.lua").display().to_string()
    );
    assert_eq!(values["timeout"]["value"], "10m");
    assert_eq!(values["timeout"]["source"], "file");
    assert!(
        values["timeout"]["from"]
            .as_str()
            .unwrap()
            .ends_with("oneshot/config.toml:2")
    );
    assert_eq!(values["auditor-cmd"]["from"], "env ONESHOT_AUDITOR_CMD");
    assert_eq!(values["hook-budget"]["from"], "env ONESHOT_HOOK_BUDGET");
    assert_eq!(values["hook-budget"]["value"], "1s");
    assert_eq!(values["policy-reload"]["source"], "default");
    assert_eq!(values["policy-reload"]["value"], Value::Null);

    // The human form says the same.
    let out = bare(&w, &project).arg("config").output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("max-iterations") && l.contains(&format!("[{file}:3]"))),
        "{shown}"
    );
}

#[test]
fn a_session_runs_from_the_project_file_alone_from_a_subdirectory() {
    let w = World::new();
    let project = w.work();
    std::fs::create_dir_all(project.join("sub")).unwrap();
    w.file("w.sh", "echo done > out.txt");
    w.file("a.sh", AUDIT_DONE);
    // Command lines are not paths: they run in the workdir, so name the scripts absolutely.
    std::fs::write(
        project.join("oneshot.toml"),
        format!(
            "worker-cmd = \"sh {}\"\nauditor-cmd = \"sh {}\"\nmax-iterations = 2\n",
            w.tmp.path().join("w.sh").display(),
            w.tmp.path().join("a.sh").display()
        ),
    )
    .unwrap();
    let out = bare(&w, &project.join("sub"))
        .arg("make it so")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    // Found from the project root and from another subdirectory.
    for dir in [project.clone(), project.join("sub")] {
        let out = bare(&w, &dir).args(["list", "--json"]).output().unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out));
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(listed.contains("make it so"), "{listed}");
        let out = bare(&w, &dir).arg("status").output().unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("COMPLETED"),
            "{}",
            text(&out)
        );
    }
    // The project file's limit was recorded with its line.
    let state_root = w.tmp.path().join("xdg-state/oneshot/projects");
    let project_dir = std::fs::read_dir(&state_root)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let session = std::fs::read_dir(project_dir.join("sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(session.join("oneshot.json")).unwrap())
            .unwrap();
    let from = state["settings"]["limits"]["max_iterations"]["from"]
        .as_str()
        .unwrap();
    assert!(from.ends_with("oneshot.toml:3"), "{from}");
    assert_eq!(state["max_iterations"], 2);
}

#[test]
fn a_git_project_shares_one_state_dir_and_state_inside_it_is_ignored() {
    let w = World::new();
    let repo = w.work();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("deep/er")).unwrap();
    let at = |dir: &Path| config_json(&mut bare(&w, dir))["values"]["state-dir"]["value"].clone();
    assert_eq!(at(&repo), at(&repo.join("deep/er")));
    assert_eq!(
        config_json(&mut bare(&w, &repo.join("deep")))["project_root"],
        repo.canonicalize().unwrap().display().to_string()
    );
    // State kept inside the repository: a .gitignore keeps `git add -A` away from it.
    std::fs::write(repo.join("oneshot.toml"), "state-dir = \".oneshot\"\n").unwrap();
    let worker = w.script("w.sh", "echo x > out.txt");
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = bare(&w, &repo.join("deep"))
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor, "t"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let ignore = std::fs::read_to_string(repo.join(".oneshot/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "*"), "{ignore}");
    let out = bare(&w, &repo.join("deep/er"))
        .arg("list")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("COMPLETED"),
        "{}",
        text(&out)
    );
}

#[test]
fn mistakes_in_a_config_file_name_the_line() {
    let w = World::new();
    std::fs::write(
        w.work().join("oneshot.toml"),
        "policy = \"p.lua\"\nmax-iteratons = 3\n",
    )
    .unwrap();
    let out = bare(&w, &w.work()).arg("list").output().unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    let file = w.work().canonicalize().unwrap().join("oneshot.toml");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "oneshot: error: failed to load config {}:2: unknown key max-iteratons; did you \
             mean max-iterations?\n",
            file.display()
        )
    );
    std::fs::write(w.work().join("oneshot.toml"), "\ntimeout = 5.5\n").unwrap();
    let out = bare(&w, &w.work()).arg("config").output().unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(":2: timeout must be a duration string"),
        "{}",
        text(&out)
    );
}

#[test]
fn init_writes_a_project_that_checks_tests_and_configures() {
    let w = World::new();
    let dir = w.work();
    let out = bare(&w, &dir).arg("init").output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    for f in [
        "oneshot.toml",
        "oneshot.lua",
        "oneshot_test.lua",
        "oneshot.d.lua",
        "oneshot.d.luau",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    for cmd in ["check", "test"] {
        let out = bare(&w, &dir)
            .args(["policy", cmd, "oneshot.lua"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "policy {cmd}: {}", text(&out));
    }
    let v = config_json(&mut bare(&w, &dir));
    assert_eq!(v["values"]["policy"]["source"], "file");
    assert_eq!(
        v["values"]["policy"]["value"],
        dir.canonicalize()
            .unwrap()
            .join("oneshot.lua")
            .display()
            .to_string()
    );
    // A second init refuses and names what exists; --force overwrites.
    std::fs::write(dir.join("oneshot.lua"), "-- mine").unwrap();
    let out = bare(&w, &dir).arg("init").output().unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("oneshot.lua") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("oneshot.lua")).unwrap(),
        "-- mine"
    );
    let out = bare(&w, &dir).args(["init", "--force"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_ne!(
        std::fs::read_to_string(dir.join("oneshot.lua")).unwrap(),
        "-- mine"
    );
}
