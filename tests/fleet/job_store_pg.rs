//! `oneshot job …` and `oneshot store migrate` on a PostgreSQL store, through the real binary
//! against a real server (a temporary cluster, tests/common/pg_server.rs): the store chosen by
//! `--store`, `store = "…"` in oneshot.toml and `ONESHOT_STORE`; a database refused until it
//! is migrated; a job created, run by a runner, listed, shown and approved there; and a URL's
//! password never printed. The tests skip (saying so) when PostgreSQL is not installed, except
//! in CI.

use crate::job_env;
use crate::pg_server;

use job_env::{DONE, Env, GOOD_WORKER, git};
use std::process::Output;

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Creates an active job on `store` with command-line agents; its id.
fn create_on(env: &Env, store: &str) -> String {
    env.create(GOOD_WORKER, DONE, &["--activate", "--store", store])
}

fn show_on(env: &Env, store: &str, id: &str) -> serde_json::Value {
    serde_json::from_str(&env.ok(&["job", "show", id, "--json", "--store", store])).unwrap()
}

/// `url` with `password` added to its user (`postgres://user:password@…`).
fn with_password(url: &str, password: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (user, host) = rest.split_once('@').unwrap();
    format!("{scheme}://{user}:{password}@{host}")
}

#[test]
fn a_new_database_is_refused_until_migrated_then_jobs_run_there() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    let env = Env::new();

    // Before `store migrate`: a store error (exit 1) that names the command to run.
    let out = env.oneshot(&["job", "list", "--store", &url]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("oneshot store migrate"), "{err}");
    assert!(err.contains("no oneshot job store yet"), "{err}");

    // Migrate: once from 0, then already current.
    let first = env.ok(&["store", "migrate", "--store", &url]);
    assert!(first.contains("schema version 0 → 8"), "{first}");
    assert!(first.contains(&url), "the store is named: {first}");
    let again = env.ok(&["store", "migrate", "--store", &url]);
    assert!(again.contains("already at schema version 8"), "{again}");

    // A job created there, stepped by a runner there, to APPROVAL_REQUIRED.
    let id = create_on(&env, &url);
    assert_eq!(show_on(&env, &url, &id)["job"]["state"], "PENDING");
    let ran = env.ok(&["job", "run", "--store", &url]);
    assert!(
        ran.contains(&id) && ran.contains("APPROVAL_REQUIRED"),
        "{ran}"
    );
    let shown = show_on(&env, &url, &id);
    assert_eq!(shown["job"]["state"], "APPROVAL_REQUIRED", "{shown}");
    // The worker's work is where the runner put it.
    let ws = shown["job"]["workspace"]["path"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(std::path::Path::new(ws).join("f.txt")).unwrap(),
        "hi\n"
    );

    // It lives in PostgreSQL, not in the default SQLite file.
    let listed = env.ok(&["job", "list", "--store", &url]);
    assert!(listed.contains(&id), "{listed}");
    let local = env.ok(&["job", "list"]);
    assert!(!local.contains(&id), "the SQLite store has it too: {local}");

    env.ok(&["job", "approve", &id, "--store", &url]);
    assert_eq!(show_on(&env, &url, &id)["job"]["state"], "SUCCESS");
    let audit = env.ok(&["job", "audit", &id, "--store", &url]);
    assert!(
        audit.contains("approve") && audit.contains("tester"),
        "{audit}"
    );

    // `job step` and the other verbs on the same store.
    let second = create_on(&env, &url);
    let stepped = env.ok(&["job", "step", &second, "--store", &url]);
    assert!(stepped.contains("APPROVAL_REQUIRED"), "{stepped}");
    env.ok(&[
        "job",
        "reject",
        &second,
        "--feedback",
        "say it twice",
        "--store",
        &url,
    ]);
    assert_eq!(show_on(&env, &url, &second)["job"]["state"], "PENDING");
    env.ok(&["job", "cancel", &second, "--store", &url]);
    assert_eq!(show_on(&env, &url, &second)["job"]["state"], "CANCELED");

    // A TAB after `job show --store URL` offers the ids there (fish's protocol: id, TAB,
    // state and title).
    let prefix = &id[..8];
    let out = env
        .command(&[])
        .env("ONESHOT_COMPLETE", "fish")
        .args(["--", "oneshot", "job", "show", "--store", &url, prefix])
        .output()
        .unwrap();
    let offered = String::from_utf8_lossy(&out.stdout);
    assert!(
        offered.contains(&format!("{id}\tSUCCESS write hi to f.txt")),
        "{offered}"
    );
}

#[test]
fn oneshot_store_and_the_project_file_choose_the_store() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    let env = Env::new();
    env.ok(&["store", "migrate", "--store", &url]);
    let id = create_on(&env, &url);

    // ONESHOT_STORE.
    let out = env
        .command(&["job", "list"])
        .env("ONESHOT_STORE", &url)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id));
    let out = env
        .command(&["config"])
        .env("ONESHOT_STORE", &url)
        .output()
        .unwrap();
    let config = String::from_utf8_lossy(&out.stdout);
    assert!(
        config.lines().any(|l| l.starts_with("store ")
            && l.contains(&url)
            && l.ends_with("[env ONESHOT_STORE]")),
        "{config}"
    );

    // `store = "…"` in the project's oneshot.toml, which wins over the environment.
    std::fs::write(
        env.repo().join("oneshot.toml"),
        format!("store = \"{url}\"\n"),
    )
    .unwrap();
    git(&env.repo(), &["add", "oneshot.toml"]);
    git(&env.repo(), &["commit", "-qm", "store"]);
    let elsewhere = env.private.path().join("other.db");
    let out = env
        .command(&["job", "show", &id])
        .env("ONESHOT_STORE", &elsewhere)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains(&id) && shown.contains("PENDING"), "{shown}");
    let config = env.ok(&["config", "--json"]);
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(config["values"]["store"]["value"], url.as_str());
    assert_eq!(config["values"]["store"]["source"], "file");

    // A runner started here steps it without being told where the store is.
    let ran = env.ok(&["job", "run"]);
    assert!(ran.contains(&id), "{ran}");
    assert_eq!(
        show_on(&env, &url, &id)["job"]["state"],
        "APPROVAL_REQUIRED"
    );

    // The flag wins over the file: a SQLite file of its own, without the job.
    let listed = env.ok(&["job", "list", "--store", elsewhere.to_str().unwrap()]);
    assert!(!listed.contains(&id), "{listed}");
    assert!(elsewhere.is_file(), "the SQLite store was made");
}

#[test]
fn a_password_in_the_url_is_never_shown() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    // The test cluster trusts its socket, so the password is ignored but still a secret.
    let secret = with_password(&url, "secretpw");
    let env = Env::new();
    let mut seen = Vec::new();
    let mut run = |args: &[&str], store_env: bool| {
        let mut c = env.command(args);
        if store_env {
            c.env("ONESHOT_STORE", &secret);
        }
        let out = c.output().unwrap();
        seen.push((args.join(" "), text(&out)));
        out
    };
    let refused = run(&["job", "list", "--store", &secret], false);
    assert_eq!(refused.status.code(), Some(1));
    let migrated = run(&["store", "migrate", "--store", &secret], false);
    assert!(migrated.status.success());
    let created = run(
        &[
            "job",
            "create",
            "--worker-cmd",
            GOOD_WORKER,
            "--auditor-cmd",
            DONE,
            "--activate",
            "--store",
            &secret,
            "write hi to f.txt",
        ],
        false,
    );
    assert!(created.status.success());
    let id = String::from_utf8_lossy(&created.stdout).trim().to_string();
    assert!(run(&["job", "run", "-v"], true).status.success());
    assert!(run(&["job", "show", &id], true).status.success());
    assert!(run(&["job", "show", &id, "--json"], true).status.success());
    assert!(run(&["job", "list", "--json"], true).status.success());
    assert!(run(&["config"], true).status.success());
    assert!(run(&["config", "--json"], true).status.success());
    // A server that is not there: the error names the URL, masked.
    let nowhere = with_password(
        "postgres://oneshot_test@localhost/nowhere?host=/nonexistent-dir&port=1",
        "secretpw",
    );
    let failed = run(&["job", "list", "--store", &nowhere], false);
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        run(&["store", "migrate", "--store", &nowhere], false)
            .status
            .code()
            == Some(1)
    );

    for (args, out) in &seen {
        assert!(
            !out.contains("secretpw"),
            "`oneshot {args}` showed the password:\n{out}"
        );
    }
    let (_, refusal) = &seen[0];
    assert!(refusal.contains("oneshot_test:[REDACTED]@"), "{refusal}");
    let (_, config) = seen.iter().find(|(a, _)| a == "config").unwrap();
    assert!(config.contains(":[REDACTED]@"), "{config}");
    let (_, nowhere_err) = seen
        .iter()
        .find(|(a, _)| a.contains("nonexistent"))
        .unwrap();
    assert!(nowhere_err.contains("[REDACTED]"), "{nowhere_err}");
}

#[test]
fn store_migrate_on_a_sqlite_file_says_it_migrates_itself() {
    let env = Env::new();
    let out = env.ok(&["store", "migrate"]);
    let db = env.state_dir().join("jobs.db");
    assert!(
        out.contains(&db.display().to_string()) && out.contains("migrates itself"),
        "{out}"
    );
    assert!(db.is_file());
    // A file that is no job store is refused, not overwritten.
    let foreign = env.private.path().join("notes.txt");
    std::fs::write(&foreign, "not a database\n").unwrap();
    let out = env.oneshot(&["store", "migrate", "--store", foreign.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap(),
        "not a database\n"
    );
    // A store that is neither is a usage error that says what to give.
    let out = env.oneshot(&["job", "list", "--store", "mysql://u@h/d"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("postgres://"), "{}", text(&out));
}
