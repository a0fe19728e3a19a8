//! Things oneshot did not put where it keeps its files (issue 20, found by a chaos run): a FIFO
//! in place of a session's state file, log or lock; the sealing key's directory shared with
//! others; a job store that is another program's database; a file where a job's worktree
//! should be. Each is reported, naming the path and what to do, and left as it was; nothing
//! hangs. Every command here runs under a deadline, so a regression fails instead of hanging
//! the suite.

use crate::common;
use common::*;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::job_env;

/// Runs `cmd` to its end, which must come within a few seconds (the commands here read a few
/// files); past that it is killed and the test fails.
fn within(mut cmd: Command) -> Output {
    let child = spawn(&mut cmd);
    ended(child, &format!("{cmd:?}"))
}

/// `cmd` started with its output captured.
fn spawn(cmd: &mut Command) -> std::process::Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` (`what`) to end, which must come within 30 s; past that it is killed and
/// the test fails.
fn ended(child: std::process::Child, what: &str) -> Output {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output().unwrap()));
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(out) => out,
        Err(_) => {
            signal(pid, SIGKILL);
            panic!("{what} still runs after 30 s: it blocks on something");
        }
    }
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A world whose sealing key is its own, and one finished session in it.
fn world_with_a_session() -> (World, String) {
    let w = World::new();
    let out = within(session(&w));
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    (w, id)
}

fn oneshot(w: &World, args: &[&str]) -> Command {
    let mut c = w.cmd();
    c.env("ONESHOT_KEY_FILE", w.tmp.path().join("key"))
        .args(args);
    c
}

fn session(w: &World) -> Command {
    oneshot(
        w,
        &[
            "--worker-cmd",
            "true",
            "--auditor-cmd",
            "echo VERDICT: DONE",
            "the task",
        ],
    )
}

#[test]
fn making_the_sealing_key_changes_the_mode_of_no_directory_it_did_not_make() {
    let w = World::new();
    // A key file in a directory shared with everyone, like /tmp.
    let shared = w.tmp.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let mut cmd = session(&w);
    cmd.env("ONESHOT_KEY_FILE", shared.join("key"));
    let out = within(cmd);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(mode(&shared), 0o1777, "the shared directory keeps its mode");
    assert_eq!(mode(&shared.join("key")), 0o600, "the key is private");

    // The directories oneshot makes for it are private.
    let fresh = w.tmp.path().join("fresh");
    let mut cmd = session(&w);
    cmd.env("ONESHOT_KEY_FILE", fresh.join("oneshot/key"));
    let out = within(cmd);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(mode(&fresh), 0o700);
    assert_eq!(mode(&fresh.join("oneshot")), 0o700);
    assert_eq!(mode(&fresh.join("oneshot/key")), 0o600);
}

#[test]
fn a_fifo_for_a_state_file_is_a_damaged_session_not_a_hang() {
    let (w, id) = world_with_a_session();
    let state = w.session_dir(&id).join("oneshot.json");
    std::fs::remove_file(&state).unwrap();
    mkfifo(&state);
    let says = |out: &Output| {
        let all = text(out);
        assert!(
            all.contains(&state.display().to_string())
                && all.contains("it is a FIFO (named pipe), not a regular file")
                && all.contains("remove it or move it away"),
            "{all}"
        );
    };

    let out = within(oneshot(&w, &["list"]));
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("unreadable: failed to read"),
        "{}",
        text(&out)
    );
    says(&out);
    let out = within(oneshot(&w, &["list", "--json"]));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["session_id"], id.as_str());
    assert!(row["error"].as_str().unwrap().contains("FIFO"), "{row}");

    // The latest session, or the one named: an error naming the file, never "not found".
    for args in [
        &["status"][..],
        &["status", &id],
        &["status", &id, "--json"],
    ] {
        let out = within(oneshot(&w, args));
        assert_eq!(code(&out), 1, "{args:?}: {}", text(&out));
        says(&out);
    }
    let out = within(oneshot(&w, &["resume", &id]));
    assert_ne!(code(&out), 0, "{}", text(&out));
    says(&out);
    assert!(
        std::fs::symlink_metadata(&state)
            .unwrap()
            .file_type()
            .is_fifo(),
        "left as it was"
    );
}

#[test]
fn a_fifo_for_the_log_or_the_lock_is_reported_or_ignored_not_waited_on() {
    let (w, id) = world_with_a_session();
    let log = w.session_dir(&id).join("oneshot-log.json");
    std::fs::remove_file(&log).unwrap();
    mkfifo(&log);
    for args in [
        &["log", &id][..],
        &["log", &id, "--follow"],
        &["log", &id, "--raw"],
    ] {
        let out = within(oneshot(&w, args));
        assert_eq!(code(&out), 1, "{args:?}: {}", text(&out));
        let all = text(&out);
        assert!(
            all.contains(&format!(
                "read {}: it is a FIFO (named pipe)",
                log.display()
            )),
            "{args:?}: {all}"
        );
    }
    // The lock names who drives the session: a FIFO there names no one.
    let lock = w.session_dir(&id).join("lock");
    let _ = std::fs::remove_file(&lock);
    mkfifo(&lock);
    for args in [&["list"][..], &["status", &id]] {
        let out = within(oneshot(&w, args));
        assert_eq!(code(&out), 0, "{args:?}: {}", text(&out));
        assert!(text(&out).contains("COMPLETED"), "{args:?}: {}", text(&out));
    }
}

/// The file's SHA-256, hex.
fn sha256(path: &Path) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(path).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Makes a file at the path given.
type Make<'a> = &'a dyn Fn(&Path);

#[test]
fn a_job_store_that_is_not_oneshots_is_refused_byte_for_byte_untouched() {
    let w = World::new();
    let state = w.state_dir();
    std::fs::create_dir_all(&state).unwrap();
    let db = state.join("jobs.db");
    let make: [(&str, Make, &str); 4] = [
        (
            "another program's database",
            &|p| {
                let c = rusqlite::Connection::open(p).unwrap();
                c.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x');")
                    .unwrap();
            },
            "a SQLite database, but not a oneshot job store (it has tables of its own); nothing \
             was written to it",
        ),
        (
            "a database claiming oneshot's version without its tables",
            &|p| {
                let c = rusqlite::Connection::open(p).unwrap();
                c.execute_batch("CREATE TABLE notes (body TEXT); PRAGMA user_version = 1;")
                    .unwrap();
            },
            "not a oneshot job store",
        ),
        (
            "a newer oneshot's store",
            &|p| {
                let c = rusqlite::Connection::open(p).unwrap();
                c.execute_batch("CREATE TABLE jobs (id TEXT); PRAGMA user_version = 99;")
                    .unwrap();
            },
            "written by a newer oneshot (schema version 99; this one knows up to 7); nothing \
             was written to it; upgrade oneshot",
        ),
        (
            "a text file",
            &|p| {
                std::fs::write(p, "these are not the jobs you are looking for\n".repeat(50))
                    .unwrap()
            },
            "not a SQLite database, so not a oneshot job store; nothing was written to it",
        ),
    ];
    for (what, make, says) in make {
        make(&db);
        let before = sha256(&db);
        for args in [
            &["job", "list"][..],
            &["job", "show", "job-1"],
            &["job", "run"],
        ] {
            let out = within(oneshot(&w, args));
            assert_eq!(code(&out), 1, "{what}, {args:?}: {}", text(&out));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&format!(
                    "failed to open the job store: job store {}",
                    db.display()
                )) && err.contains(says),
                "{what}, {args:?}: {err}"
            );
            assert_eq!(sha256(&db), before, "{what}: the file is unchanged");
            for side in ["jobs.db-wal", "jobs.db-shm", "jobs.db-journal"] {
                assert!(!state.join(side).exists(), "{what}: {side} was made");
            }
        }
        std::fs::remove_file(&db).unwrap();
    }

    // A FIFO is not opened at all.
    mkfifo(&db);
    let out = within(oneshot(&w, &["job", "list"]));
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(
        text(&out).contains("it is a FIFO (named pipe)"),
        "{}",
        text(&out)
    );
    std::fs::remove_file(&db).unwrap();

    // What is oneshot's opens, and opens again.
    for _ in 0..2 {
        let out = within(oneshot(&w, &["job", "list"]));
        assert_eq!(code(&out), 0, "{}", text(&out));
    }
    // An empty file is a new store.
    std::fs::remove_file(&db).unwrap();
    let _ = std::fs::remove_file(state.join("jobs.db-wal"));
    let _ = std::fs::remove_file(state.join("jobs.db-shm"));
    std::fs::write(&db, "").unwrap();
    let out = within(oneshot(&w, &["job", "list"]));
    assert_eq!(code(&out), 0, "{}", text(&out));
}

#[test]
fn a_file_where_a_jobs_workspace_should_be_is_named_with_the_job_and_what_to_do() {
    use job_env::{DONE, Env, GOOD_WORKER};
    let scratch = tempfile::tempdir().unwrap();
    let plain = scratch.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join("a.txt"), "a\n").unwrap();
    let plain = plain.display().to_string();
    // Where the file goes: the directory of all workspaces, or the job's own; from a git
    // source (a worktree) or a plain one (a copy).
    type Where = fn(&Path, &str) -> std::path::PathBuf;
    let cases: [(&str, Where, &[&str]); 4] = [
        ("worktrees, git", |s, _| s.join("worktrees"), &[]),
        ("the job's, git", |s, id| s.join("worktrees").join(id), &[]),
        (
            "worktrees, plain",
            |s, _| s.join("worktrees"),
            &["--source", &plain],
        ),
        (
            "the job's, plain",
            |s, id| s.join("worktrees").join(id),
            &["--source", &plain],
        ),
    ];
    for (what, place, source) in cases {
        let env = Env::new();
        let state = env.state_dir();
        let mut args = vec!["--activate"];
        args.extend_from_slice(source);
        let id = env.create(GOOD_WORKER, DONE, &args);
        let blocking = place(&state, &id);
        std::fs::create_dir_all(blocking.parent().unwrap()).unwrap();
        std::fs::write(&blocking, "not a workspace").unwrap();

        let out = env.oneshot(&["job", "step", &id]);
        // The step left its job needing a human: a script stepping it stops there.
        assert_eq!(code(&out), 1, "{what}: {}", text(&out));
        assert_eq!(env.state(&id), "INTERVENTION_REQUIRED", "{what}");
        let reason = env.show(&id)["job"]["reason"].as_str().unwrap().to_string();
        let says = format!(
            "{} is a file where job {id}'s workspace needs a directory; nothing was removed: \
             remove it or move it away, then run `oneshot job resubmit {id}` and step the job \
             again (`oneshot job step {id}`)",
            blocking.display()
        );
        assert_eq!(reason, says, "{what}");
        assert_eq!(
            std::fs::read_to_string(&blocking).unwrap(),
            "not a workspace",
            "{what}: left as it was"
        );

        // Doing what it says works.
        std::fs::remove_file(&blocking).unwrap();
        env.ok(&["job", "resubmit", &id]);
        env.ok(&["job", "step", &id]);
        assert_eq!(env.state(&id), "APPROVAL_REQUIRED", "{what}");
    }
}

/// A FIFO put in place of the workdir snapshot while the worker runs: the inspection after the
/// worker fails does not wait on it (it reads no snapshot and judges with what it has).
#[test]
fn a_fifo_for_the_workdir_snapshot_does_not_hang_the_inspection() {
    let w = World::new();
    // Not beside the key (`oneshot`): a directory holding it takes no new entries from agents.
    let marks = w.tmp.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    let (go, started) = (marks.join("go"), marks.join("started"));
    // Fails once after changing a file (salvaged: run again), then succeeds.
    let worker = w.script(
        "w.sh",
        &format!(
            "if [ -e {s} ]; then exit 0; fi; touch {s}; while [ ! -e {g} ]; do sleep 0.05; done; \
             echo made > f.txt; exit 1",
            s = started.display(),
            g = go.display()
        ),
    );
    let mut cmd = oneshot(
        &w,
        &[
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            "echo VERDICT: DONE",
            "the task",
        ],
    );
    let child = spawn(&mut cmd);
    w.wait_for(&started, Duration::from_secs(20));
    let snapshot = w.session_dir(&w.session_id()).join("snapshot.json");
    let _ = std::fs::remove_file(&snapshot);
    mkfifo(&snapshot);
    std::fs::write(&go, "").unwrap();
    let out = ended(child, "the session after its worker failed");
    // Inspected and judged without the snapshot (what changed cannot be told from it), and
    // the run comes to its end.
    assert!(text(&out).contains("RECOVERY_PENDING ->"), "{}", text(&out));
    assert!(code(&out) == 0 || code(&out) == 1, "{}", text(&out));
    let status = within(oneshot(&w, &["status", &w.session_id()]));
    assert_eq!(code(&status), 0, "{}", text(&status));
}
