//! Notifications of needs-a-human events (`[notify]`, docs/notify.md), through the real
//! binary: a job that reaches APPROVAL_REQUIRED is told to a command sink exactly once — also
//! when two runners race to send an event a runner left unsent, and when a runner runs again;
//! a webhook sink receives the POST on a loopback server; a failing sink is tried again and
//! its failure recorded in the store; config mistakes are named with their file and line; the
//! job's policy's `on_notify` suppresses one kind (recorded, never sent) and enriches another.

use crate::common;
use crate::job_env;
use job_env::{DONE, Env, GOOD_WORKER};
use oneshot::job::store::prelude::*;
use oneshot::job::store::{NotifyStatus, SqliteStore};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Writes the user's config file (the repository stays clean for the jobs).
fn config(env: &Env, text: &str) -> PathBuf {
    let dir = env.config_home().join("oneshot");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A command sink that appends each event (one JSON line) to `out`, and whether it saw a
/// dashboard token in its environment.
fn appending_sink(env: &Env, out: &Path) -> String {
    let script = env.private.path().join("sink.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nline=$(cat)\necho \"$line\" >> '{out}'\n\
             echo \"$ONESHOT_NOTIFY_KIND $ONESHOT_NOTIFY_JOB token=${{ONESHOT_TOKEN:-none}} \
             secret=${{SOME_SECRET:-none}}\" >> '{out}.env'\n",
            out = out.display()
        ),
    )
    .unwrap();
    format!("sh {}", script.display())
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn store(env: &Env) -> SqliteStore {
    SqliteStore::open(env.state_dir().join("jobs.db")).unwrap()
}

#[test]
fn approval_pending_reaches_a_command_sink_once_with_its_link_and_no_token() {
    let env = Env::new();
    let out = env.private.path().join("events.jsonl");
    config(
        &env,
        &format!(
            "[notify]\nlink-base = \"http://127.0.0.1:8719/\"\n\n[[notify.sink]]\ncommand = \
             \"{}\"\n",
            appending_sink(&env, &out)
        ),
    );
    let id = env.create(GOOD_WORKER, DONE, &["--activate"]);
    let run = env
        .command(&["job", "run"])
        .env("ONESHOT_TOKEN", "osk_not-for-hooks")
        .env(
            "SOME_SECRET",
            "osk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        )
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", common::text(&run));
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    let got = lines(&out);
    assert_eq!(got.len(), 1, "one event: {got:?}");
    let event: Value = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(event["kind"], "approval_pending", "{event}");
    assert_eq!(event["job"], id.as_str());
    assert_eq!(event["state"], "APPROVAL_REQUIRED");
    assert_eq!(
        event["link"],
        format!("http://127.0.0.1:8719/jobs/{id}").as_str()
    );
    assert!(event["at"].as_str().unwrap().ends_with('Z'), "{event}");
    assert_eq!(event["title"], "write hi to f.txt");
    assert_eq!(
        lines(&out.with_extension("jsonl.env")),
        [format!("approval_pending {id} token=none secret=none")],
        "the sink inherits no dashboard token nor anything holding one"
    );

    // The runner runs again (a restart): nothing new is sent.
    env.ok(&["job", "run"]);
    assert_eq!(lines(&out).len(), 1);
    let rows = store(&env).notifications(Some(&id)).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].status, NotifyStatus::Sent);
    assert_eq!(rows[0].attempts, 1);
    assert_eq!(rows[0].kind, "approval_pending");
}

#[test]
fn two_runners_racing_to_send_an_event_left_unsent_send_it_once() {
    let env = Env::new();
    let out = env.private.path().join("events.jsonl");
    // Reached with no [notify]: its event was never sent (as by a runner that died between
    // its write and its claim).
    let id = env.job_in("APPROVAL_REQUIRED");
    let id2 = env.job_in("INTERVENTION_REQUIRED");
    config(
        &env,
        &format!(
            "[[notify.sink]]\ncommand = \"{}\"\n",
            appending_sink(&env, &out)
        ),
    );
    let spawn = || {
        env.command(&["job", "run"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let runners: Vec<_> = (0..4).map(|_| spawn()).collect();
    for r in runners {
        let out = r.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut got: Vec<(String, String)> = lines(&out)
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["job"].as_str().unwrap().to_string(),
                v["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let mut want = vec![
        (id.clone(), "approval_pending".to_string()),
        (id2.clone(), "intervention_required".to_string()),
    ];
    want.sort();
    assert_eq!(got, want, "each event once, however many runners looked");
    env.ok(&["job", "run"]);
    assert_eq!(lines(&out).len(), 2);
}

/// A loopback HTTP server that answers each request with `status` and hands the requests'
/// heads and bodies over a channel.
fn http_server(status: u16) -> (u16, std::sync::mpsc::Receiver<(String, String)>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            conn.set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head, body) = loop {
                let n = conn.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break (String::from_utf8_lossy(&buf).into_owned(), String::new());
                }
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).into_owned();
                if let Some(end) = text.find("\r\n\r\n") {
                    let head = text[..end].to_string();
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse().ok())?
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len {
                        break (head, text[end + 4..end + 4 + len].to_string());
                    }
                }
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\ncontent-length: 2\r\nconnection: close\r\n\r\nno"
            );
            let _ = tx.send((head, body));
        }
    });
    (port, rx)
}

#[test]
fn a_webhook_sink_receives_the_event_as_a_json_post() {
    let env = Env::new();
    let (port, got) = http_server(200);
    config(
        &env,
        &format!(
            "[notify]\nlink-base = \"http://dash.example:8719\"\n[[notify.sink]]\nwebhook = \
             \"http://127.0.0.1:{port}/hooks/oneshot?team=a\"\nevents = [\"approval_pending\"]\n"
        ),
    );
    let id = env.create(GOOD_WORKER, DONE, &["--activate"]);
    env.ok(&["job", "run"]);
    let (head, body) = got.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        head.starts_with("POST /hooks/oneshot?team=a HTTP/1.1"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let event: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(event["kind"], "approval_pending");
    assert_eq!(event["job"], id.as_str());
    assert_eq!(
        event["link"],
        format!("http://dash.example:8719/jobs/{id}").as_str()
    );
    assert!(
        got.recv_timeout(Duration::from_millis(500)).is_err(),
        "one POST"
    );
    // A sink that takes only approvals hears nothing of an intervention.
    let other = env.create(GOOD_WORKER, "echo VERDICT: IMPOSSIBLE", &["--activate"]);
    env.ok(&["job", "run"]);
    assert_eq!(env.state(&other), "INTERVENTION_REQUIRED");
    assert!(got.recv_timeout(Duration::from_millis(500)).is_err());
}

#[test]
fn a_failing_sink_is_tried_again_and_its_failure_recorded() {
    let env = Env::new();
    let tries = env.private.path().join("tries");
    let (port, got) = http_server(503);
    config(
        &env,
        &format!(
            "[[notify.sink]]\ncommand = \"sh -c 'echo try >> {}; echo the pager is down >&2; \
             exit 3'\"\n\n[[notify.sink]]\nwebhook = \"http://127.0.0.1:{port}/\"\n",
            tries.display()
        ),
    );
    let id = env.create(GOOD_WORKER, DONE, &["--activate"]);
    env.ok(&["job", "run"]);
    assert_eq!(lines(&tries).len(), 3, "three attempts");
    let posts = got.try_iter().count();
    assert_eq!(posts, 3, "three POSTs");
    let rows = store(&env).notifications(Some(&id)).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let n = &rows[0];
    assert_eq!(n.status, NotifyStatus::Failed);
    assert_eq!(n.attempts, 6);
    let error = n.error.as_deref().unwrap();
    assert!(
        error.contains("the pager is down") && error.contains("exit status: 3"),
        "{error}"
    );
    assert!(error.contains("HTTP 503"), "{error}");
    // Failed is recorded, not sent again by the next runner.
    env.ok(&["job", "run"]);
    assert_eq!(lines(&tries).len(), 3);
}

#[test]
fn config_mistakes_are_named_with_their_line_and_what_to_write() {
    let env = Env::new();
    let cases = [
        (
            "[notify]\nlink_base = \"http://x\"\n",
            ":2: unknown key notify.link_base; did you mean link-base?",
        ),
        (
            "[[notify.sink]]\nwebhook = \"https://hooks.example/x\"\n",
            ":2: notify.sink.webhook \"https://hooks.example/x\": https is not supported",
        ),
        (
            "\n[[notify.sink]]\nevents = [\"approval_pending\"]\n",
            ":2: a notify.sink needs command = \"…\" or webhook = \"http://…\"",
        ),
        (
            "[[notify.sink]]\ncommand = \"sh x.sh\"\nevents = [\"approved\"]\n",
            ":3: notify.sink.events: not an event name; the events are approval_pending, \
             intervention_required, agent_stalled, budget_80",
        ),
        (
            "[[notify.sink]]\ncommand = \"sh x.sh\"\nretries = 3\n",
            ":3: unknown key notify.sink.retries; the keys of notify.sink are command, \
             webhook, events, timeout",
        ),
    ];
    for (text, want) in cases {
        let path = config(&env, text);
        let out = env.oneshot(&["job", "list"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains(&format!("{}{want}", path.display())),
            "{text}: {err}"
        );
    }
}

#[test]
fn a_stalled_agent_is_told_once_per_stall() {
    let env = Env::new();
    let out = env.private.path().join("events.jsonl");
    config(
        &env,
        &format!(
            "[[notify.sink]]\ncommand = \"{}\"\nevents = [\"agent_stalled\"]\n",
            appending_sink(&env, &out)
        ),
    );
    let policy = env.private.path().join("quick.lua");
    std::fs::write(
        &policy,
        "return { limits = { inactivity_timeout = '1s', max_iterations = 1, \
         retry = { attempts = 1 } } }\n",
    )
    .unwrap();
    let id = env.create(
        "sleep 5",
        DONE,
        &["--policy", policy.to_str().unwrap(), "--activate"],
    );
    let run = env.oneshot(&["job", "run", "--max-steps", "1"]);
    assert!(run.status.success(), "{}", common::text(&run));
    let got = lines(&out);
    assert!(!got.is_empty(), "a stall was told: {}", common::text(&run));
    let event: Value = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(event["kind"], "agent_stalled", "{event}");
    assert_eq!(event["job"], id.as_str());
    assert!(
        event["reason"]
            .as_str()
            .unwrap()
            .contains("printed nothing for the inactivity timeout"),
        "{event}"
    );
    assert!(
        event["cause"]
            .as_str()
            .unwrap()
            .contains("iteration 1 worker"),
        "{event}"
    );
    let causes: Vec<String> = lines(&out)
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["cause"].to_string())
        .collect();
    let mut unique = causes.clone();
    unique.dedup();
    assert_eq!(causes, unique, "no stall told twice");
}

#[test]
fn the_policy_s_on_notify_suppresses_one_kind_and_enriches_another() {
    let env = Env::new();
    let out = env.private.path().join("events.jsonl");
    config(
        &env,
        &format!(
            "[[notify.sink]]\ncommand = \"{}\"\n",
            appending_sink(&env, &out)
        ),
    );
    let policy = env.private.path().join("quiet.lua");
    std::fs::write(
        &policy,
        "return {\n\
         \x20 on_notify = function(ctx)\n\
         \x20   if ctx.kind == 'intervention_required' then\n\
         \x20     return false, 'the night shift fixes these in the morning'\n\
         \x20   end\n\
         \x20   return { extra = { team = 'payments', step = #ctx.cause, cause = ctx.cause,\n\
         \x20                      urgent = ctx.state == 'APPROVAL_REQUIRED',\n\
         \x20                      leak = 'ghp_' .. string.rep('a', 36) } }\n\
         \x20 end,\n\
         }\n",
    )
    .unwrap();
    let with_policy = ["--policy", policy.to_str().unwrap(), "--activate"];
    let approved = env.create(GOOD_WORKER, DONE, &with_policy);
    let stuck = env.create(GOOD_WORKER, "echo VERDICT: IMPOSSIBLE", &with_policy);
    let run = env.oneshot(&["job", "run"]);
    assert!(run.status.success(), "{}", common::text(&run));
    assert_eq!(env.state(&approved), "APPROVAL_REQUIRED");
    assert_eq!(env.state(&stuck), "INTERVENTION_REQUIRED");

    // The sink heard the approval, enriched, and nothing of the intervention.
    let got = lines(&out);
    assert_eq!(got.len(), 1, "only the approval is sent: {got:?}");
    let event: Value = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(event["kind"], "approval_pending", "{event}");
    assert_eq!(event["job"], approved.as_str());
    let cause = event["cause"].as_str().unwrap();
    assert_eq!(
        event["extra"],
        serde_json::json!({"team": "payments", "step": cause.len(), "cause": cause,
                           "urgent": true, "leak": "ghp_[REDACTED]"}),
        "the hook's fields, redacted like the rest: {event}"
    );

    let s = store(&env);
    let sent = s.notifications(Some(&approved)).unwrap();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].status, NotifyStatus::Sent);
    assert_eq!(sent[0].error, None);
    assert_eq!(
        sent[0].event["extra"], event["extra"],
        "the row holds what was sent"
    );
    let quiet = s.notifications(Some(&stuck)).unwrap();
    assert_eq!(quiet.len(), 1, "{quiet:?}");
    let q = &quiet[0];
    assert_eq!(q.kind, "intervention_required");
    assert_eq!(q.status, NotifyStatus::Suppressed);
    assert_eq!(q.attempts, 0);
    let why = q.error.as_deref().unwrap();
    assert!(
        why.contains("suppressed by the policy's on_notify (quiet.lua:2, policy sha256:")
            && why.ends_with("the night shift fixes these in the morning"),
        "which policy and why: {why}"
    );

    // Suppressed is decided, like sent: a runner that starts later does not send it.
    env.ok(&["job", "run"]);
    assert_eq!(lines(&out).len(), 1);
}

#[test]
fn an_on_notify_that_fails_sends_the_event_as_it_is_and_records_why() {
    let env = Env::new();
    let out = env.private.path().join("events.jsonl");
    config(
        &env,
        &format!(
            "[[notify.sink]]\ncommand = \"{}\"\n",
            appending_sink(&env, &out)
        ),
    );
    let policy = env.private.path().join("broken.lua");
    std::fs::write(
        &policy,
        "return {\n  on_notify = function(ctx)\n    error('no pager today')\n  end,\n}\n",
    )
    .unwrap();
    let id = env.create(
        GOOD_WORKER,
        DONE,
        &["--policy", policy.to_str().unwrap(), "--activate"],
    );
    let run = env.oneshot(&["job", "run"]);
    assert!(run.status.success(), "{}", common::text(&run));
    let got = lines(&out);
    assert_eq!(got.len(), 1, "sent all the same: {got:?}");
    let event: Value = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(event["kind"], "approval_pending");
    assert!(event.get("extra").is_none(), "as it is: {event}");
    let rows = store(&env).notifications(Some(&id)).unwrap();
    assert_eq!(rows[0].status, NotifyStatus::Sent);
    let warning = rows[0].error.as_deref().unwrap();
    assert!(
        warning.contains("fails open") && warning.contains("broken.lua:3: no pager today"),
        "{warning}"
    );
}

#[test]
fn a_land_that_fails_is_told_by_the_command_that_landed_once() {
    let env = Env::new();
    let out = env.private.path().join("events.jsonl");
    config(
        &env,
        &format!(
            "[notify]\nlink-base = \"http://127.0.0.1:8719\"\n\n\
             [[notify.sink]]\ncommand = \"{}\"\nevents = [\"intervention_required\"]\n",
            appending_sink(&env, &out)
        ),
    );
    // Two jobs write the same file differently: the second cannot land after the first.
    let job = |text: &str| {
        let id = env.create(
            &format!("sh -c 'echo {text} > a.txt'"),
            DONE,
            &["--activate"],
        );
        env.ok(&["job", "step", &id]);
        env.ok(&["job", "approve", &id]);
        id
    };
    let (first, second) = (job("one"), job("two"));
    env.ok(&["job", "land", &first]);
    assert!(
        lines(&out).is_empty(),
        "a landing is no news: {:?}",
        lines(&out)
    );
    let o = env.oneshot(&["job", "land", &second]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    assert_eq!(env.state(&second), "INTERVENTION_REQUIRED");

    // Told before the command ended, by the command (no runner ran since), once.
    let told = lines(&out);
    assert_eq!(told.len(), 1, "{told:?}");
    let event: Value = serde_json::from_str(&told[0]).unwrap();
    assert_eq!(event["kind"], "intervention_required");
    assert_eq!(event["job"], second.as_str());
    assert_eq!(
        event["link"],
        format!("http://127.0.0.1:8719/jobs/{second}").as_str()
    );
    let rows: Vec<_> = store(&env)
        .notifications(Some(&second))
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "intervention_required")
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].sender.starts_with("verb by "),
        "{:?}",
        rows[0].sender
    );
    // A runner's sweep finds it told already.
    env.ok(&["job", "run"]);
    assert_eq!(lines(&out).len(), 1, "{:?}", lines(&out));
}
