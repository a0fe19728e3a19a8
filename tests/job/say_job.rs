//! `oneshot say JOB MESSAGE` (issue 25): a human's message to a job's worker goes into the
//! job's audit trail (redacted) in the store every runner shares; the runner holding the job
//! posts it into its session, whose `message` records (shipped with the session's log) say how
//! the worker got it; a message said while no runner holds the job is carried by the first
//! worker prompt of its next session — once: a later session does not get it again. On a
//! PostgreSQL store too, said from another "machine" than the runner's.

use crate::job_env;
use crate::pg_server;
use job_env::Env;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

/// A value the redactor knows only because a secret-named variable holds it.
const SECRET: &str = "plum-orchard-4417-quietly";

/// A directory the agents may write (inside the test's temporary directory, beside the repo).
fn scratch(env: &Env) -> PathBuf {
    let d = env.dir.path().join("scratch");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A worker that saves each prompt it gets (`prompt-N.txt`), says it started (`started-N`),
/// waits for `go-N` when `gated` names its run, then writes a file; an auditor that says RETRY
/// once (`retry_once`), else DONE.
fn players(dir: &Path, gated: &[u32], retry_once: bool) -> (String, String) {
    let d = dir.display();
    let gates = gated
        .iter()
        .map(|n| format!("[ $n = {n} ] && while [ ! -f {d}/go-$n ]; do sleep 0.05; done; "))
        .collect::<String>();
    let worker = dir.join("w.sh");
    std::fs::write(
        &worker,
        format!(
            "n=$(ls {d} | grep -c '^prompt-'); n=$((n + 1)); cat > {d}/prompt-$n.txt; \
             touch {d}/started-$n; {gates}echo hi $n > f.txt; echo worked $n\n"
        ),
    )
    .unwrap();
    let auditor = dir.join("a.sh");
    let verdict = if retry_once {
        format!(
            "if [ -f {d}/audited ]; then echo 'VERDICT: DONE fine'; \
             else touch {d}/audited; echo 'VERDICT: RETRY once more'; fi\n"
        )
    } else {
        "echo 'VERDICT: DONE fine'\n".to_string()
    };
    std::fs::write(&auditor, verdict).unwrap();
    (
        format!("sh {}", worker.display()),
        format!("sh {}", auditor.display()),
    )
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `oneshot say ARGS`, said by ann with a secret in her environment.
fn say(env: &Env, args: &[&str]) -> Output {
    env.command(&["say"])
        .args(args)
        .env("ONESHOT_ACTOR", "ann")
        .env("ANN_API_TOKEN", SECRET)
        .output()
        .unwrap()
}

fn wait_for(path: &Path, within: Duration) {
    let t = Instant::now();
    while !path.exists() {
        assert!(t.elapsed() < within, "{} never came", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > within {
            let _ = child.kill();
            panic!("the runner did not end within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `message` records of the job's session entries (`job log --json`): (session, status,
/// text).
fn message_records(env: &Env, id: &str) -> Vec<(String, String, String)> {
    env.ok(&["job", "log", id, "--json"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["record"]["type"] == "message")
        .map(|e| {
            (
                e["session_id"].as_str().unwrap().to_string(),
                e["record"]["status"].as_str().unwrap().to_string(),
                e["record"]["text"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The job's `message` audit entries.
fn audited(env: &Env, id: &str) -> Vec<Value> {
    env.show(id)["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "message")
        .cloned()
        .collect()
}

#[test]
fn a_running_jobs_worker_gets_the_message_in_its_next_prompt_and_the_trail_keeps_it() {
    let env = Env::new();
    let dir = scratch(&env);
    let (worker, auditor) = players(&dir, &[1], true);
    let id = env.create(&worker, &auditor, &["--activate"]);
    let mut runner = env
        .command(&["job", "run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&dir.join("started-1"), Duration::from_secs(60));

    let said = format!("use the v2 API; the staging key is {SECRET}");
    let out = say(&env, &[&id, &said]);
    let out_text = text(&out);
    assert!(out.status.success(), "{out_text}");
    assert!(
        out_text.contains(&format!("said to job {id}")) && out_text.contains("holds it"),
        "which it was, and who holds it: {out_text}"
    );
    assert!(
        out_text
            .contains("the running worker cannot take a message mid-run; its next prompt carries"),
        "how the session took it, from its shipped journal: {out_text}"
    );
    assert!(!out_text.contains(SECRET), "{out_text}");

    std::fs::write(dir.join("go-1"), "").unwrap();
    assert!(wait_exit(&mut runner, Duration::from_secs(90)).success());

    // In the audit trail, redacted: the secret never reached the store.
    let trail = audited(&env, &id);
    assert_eq!(trail.len(), 1, "{trail:?}");
    let entry = &trail[0];
    assert_eq!(entry["actor"], "ann");
    let stored = entry["metadata"]["text"].as_str().unwrap();
    assert!(stored.starts_with("use the v2 API"), "{stored}");
    assert!(!stored.contains(SECRET), "redacted: {stored}");
    assert_eq!(entry["metadata"]["state"], "EXECUTING");
    let message_id = entry["metadata"]["message_id"].as_str().unwrap();
    let audit = env.ok(&["job", "audit", &id]);
    assert!(audit.contains("ann  message"), "{audit}");
    assert!(audit.contains("use the v2 API"), "{audit}");
    let store = std::fs::read(env.state_dir().join("jobs.db")).unwrap();
    assert!(
        !String::from_utf8_lossy(&store).contains(SECRET),
        "no store page holds the secret"
    );

    // The worker's next prompt (after the RETRY) carries it; its first did not.
    let first = std::fs::read_to_string(dir.join("prompt-1.txt")).unwrap();
    let second = std::fs::read_to_string(dir.join("prompt-2.txt")).unwrap();
    assert!(!first.contains("v2 API"), "{first}");
    assert!(second.contains("ann: use the v2 API"), "{second}");
    assert!(!second.contains(SECRET), "{second}");

    // The session's message records, in the store: the same id.
    let records = message_records(&env, &id);
    let statuses: Vec<&str> = records.iter().map(|(_, s, _)| s.as_str()).collect();
    assert_eq!(
        statuses,
        ["received", "next_prompt", "in_prompt"],
        "{records:?}"
    );
    assert!(records[0].2.starts_with("use the v2 API"), "{records:?}");
    let ids = env
        .ok(&["job", "log", &id, "--json"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["record"]["type"] == "message")
        .map(|e| e["record"]["id"].as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    assert_eq!(ids, [message_id; 3], "the audit entry's id: {records:?}");
    let log = env.ok(&["job", "log", &id]);
    assert!(log.contains("from ann: use the v2 API"), "{log}");
}

#[test]
fn a_message_to_a_queued_job_goes_into_its_first_prompt_and_no_later_session_repeats_it() {
    let env = Env::new();
    let dir = scratch(&env);
    let (worker, auditor) = players(&dir, &[], false);
    let id = env.create(&worker, &auditor, &["--activate"]);

    let out = say(&env, &[&id[..8], "the tests live in tests/unit"]);
    let out_text = text(&out);
    assert!(out.status.success(), "{out_text}");
    assert!(
        out_text.contains(&format!("said to job {id}"))
            && out_text.contains("no runner holds it")
            && out_text.contains("the first worker prompt of its next session carries"),
        "{out_text}"
    );
    env.ok(&["job", "run"]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    let first = std::fs::read_to_string(dir.join("prompt-1.txt")).unwrap();
    assert!(
        first.contains("ann: the tests live in tests/unit"),
        "{first}"
    );

    // Waiting for a human: said, then rejected — the next session's first prompt carries the
    // new message, and not the one the first session's worker took in.
    let out = say(&env, &[&id, "rename the flag to --dry"]);
    assert!(
        text(&out).contains("a `oneshot job reject"),
        "{}",
        text(&out)
    );
    env.ok(&["job", "reject", &id, "--feedback", "not yet"]);
    env.ok(&["job", "run"]);
    let next = std::fs::read_to_string(dir.join("prompt-2.txt")).unwrap();
    assert!(next.contains("ann: rename the flag to --dry"), "{next}");
    assert!(!next.contains("tests/unit"), "taken in already: {next}");

    let records = message_records(&env, &id);
    let in_prompt: Vec<&(String, String, String)> = records
        .iter()
        .filter(|(_, s, _)| s == "in_prompt")
        .collect();
    assert_eq!(in_prompt.len(), 2, "{records:?}");
    assert_ne!(in_prompt[0].0, in_prompt[1].0, "two sessions: {records:?}");
}

#[test]
fn an_ended_job_refuses_a_message_and_an_unknown_id_is_said_so() {
    let env = Env::new();
    let id = env.job_in("CANCELED");
    let out = say(&env, &[&id, "too late?"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "say to job {id}: it has ended (CANCELED); no worker of it will run again"
        )),
        "{}",
        text(&out)
    );
    assert!(audited(&env, &id).is_empty());

    let out = say(&env, &["job-ffffffff", "hello"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("no session has this id or prefix")
            && text(&out).contains("no job in the job store"),
        "{}",
        text(&out)
    );
}

#[test]
fn on_a_shared_postgres_store_a_message_said_on_another_machine_reaches_the_runners_worker() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    let env = Env::new();
    env.ok(&["store", "migrate", "--store", &url]);
    let dir = scratch(&env);
    let (worker, auditor) = players(&dir, &[1], true);
    let id = env.create(&worker, &auditor, &["--activate", "--store", &url]);
    let mut runner = env
        .command(&["job", "run", "--store", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&dir.join("started-1"), Duration::from_secs(60));

    // Another "machine": its own state directory and HOME; only the store is shared.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .arg("--state-dir")
        .arg(elsewhere.path().join("state"))
        .args(["say", &id, "--store", &url, "keep the old flag as an alias"])
        .env("HOME", elsewhere.path())
        .env("XDG_CONFIG_HOME", elsewhere.path().join("config"))
        .env("ONESHOT_ACTOR", "bo")
        .env("NO_COLOR", "1")
        .env_remove("ONESHOT_STORE")
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    let out_text = text(&out);
    assert!(out.status.success(), "{out_text}");
    assert!(
        out_text.contains("holds it") && out_text.contains("its next prompt carries"),
        "{out_text}"
    );
    std::fs::write(dir.join("go-1"), "").unwrap();
    assert!(wait_exit(&mut runner, Duration::from_secs(90)).success());
    let second = std::fs::read_to_string(dir.join("prompt-2.txt")).unwrap();
    assert!(
        second.contains("bo: keep the old flag as an alias"),
        "{second}"
    );
}
