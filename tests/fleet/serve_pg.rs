//! Several `oneshot serve` processes on one PostgreSQL store (a temporary cluster,
//! tests/common/pg_server.rs): sign-ins, verbs and live streams agree across them.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use crate::job_env;
use crate::pg_server;
use crate::serve_http;
use crate::serve_process;
use job_env::{DONE, Env, GOOD_WORKER};
use serve_http::*;
use serve_process::serve;

/// Reads a server-sent-event stream until an event named `name` whose data holds `needle`;
/// fails when none came `within` (the stream's comments keep it from timing out by itself).
fn await_event(conn: TcpStream, name: &str, needle: &str, within: Duration) -> String {
    use std::io::{BufRead, ErrorKind};
    let deadline = std::time::Instant::now() + within;
    let mut r = std::io::BufReader::new(conn);
    let (mut event, mut l) = (String::new(), String::new());
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no {name} event with {needle} within {within:?}"
        );
        match r.read_line(&mut l) {
            Ok(0) => panic!("the stream ended before {name} {needle}"),
            Ok(_) => {}
            // No whole line yet (the read timeout is a second): what came stays in `l`.
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                continue;
            }
            Err(e) => panic!("reading the stream: {e}"),
        }
        if let Some(v) = l.trim_end().strip_prefix("event: ") {
            event = v.to_string();
        } else if let Some(v) = l.trim_end().strip_prefix("data: ")
            && event == name
            && v.contains(needle)
        {
            return v.to_string();
        }
        l.clear();
    }
}

/// An open stream at `path` of the server at `host`.
fn stream(host: &str, path: &str, auth: &str) -> TcpStream {
    let mut conn = TcpStream::connect(host).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    write!(
        conn,
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nAuthorization: {auth}\r\n\r\n"
    )
    .unwrap();
    conn
}

#[test]
fn two_servers_on_one_postgresql_store_agree_on_sign_ins_verbs_and_live_streams() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    let env = Env::new();
    env.ok(&["store", "migrate", "--store", &url]);
    let store = ["--store", url.as_str()];
    let approver = env
        .ok(&[
            "token", "create", "--name", "ana", "--scope", "approve", "--store", &url,
        ])
        .trim()
        .to_string();
    let id = env.create(GOOD_WORKER, DONE, &["--activate", "--store", &url]);
    env.ok(&["job", "run", "--store", &url]);
    let a = serve(&env, &store);
    let b = serve(&env, &store);
    let auth = bearer(&approver);

    // A sign-in link printed by one server signs a browser in at the other; its cookie is
    // good at both (the session lives in the store), and the link is used up at both.
    let code = a.link.rsplit('/').next().unwrap().to_string();
    let r = http(&b, "GET", &format!("/login/{code}"), &[], "");
    assert_eq!(r.status, 303, "{}", r.body);
    let cookie = r.header("set-cookie").unwrap();
    let cookie = cookie.split(';').next().unwrap().to_string();
    for s in [&a, &b] {
        assert_eq!(http(s, "GET", "/", &[("Cookie", &cookie)], "").status, 200);
    }
    assert_eq!(
        http(&a, "GET", &format!("/login/{code}"), &[], "").status,
        403
    );

    // Both servers' streams are open; the approval goes through the first; the second's
    // job stream and the first's board stream both carry it.
    let job_on_b = stream(&b.host, &format!("/jobs/{id}/events"), &auth);
    let board_on_a = stream(&a.host, "/events", &auth);
    let page = http(
        &a,
        "GET",
        &format!("/jobs/{id}"),
        &[("Authorization", &auth)],
        "",
    );
    let body = form(&[
        ("attempt", field(&page.body, "attempt").as_str()),
        ("diff_hash", field(&page.body, "diff_hash").as_str()),
        ("state", field(&page.body, "state").as_str()),
    ]);
    std::thread::sleep(Duration::from_millis(300));
    let origin = format!("http://{}", a.host);
    let r = http(
        &a,
        "POST",
        &format!("/jobs/{id}/approve"),
        &[("Authorization", &auth), ("Origin", &origin)],
        &body,
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let seen = await_event(job_on_b, "job", "SUCCESS", Duration::from_secs(60));
    assert!(seen.contains("\"state\":\"SUCCESS\""), "{seen}");
    await_event(board_on_a, "board", &id, Duration::from_secs(60));
    // The same page's form, sent to the other server: the job moved on (409), not approved twice.
    let origin = format!("http://{}", b.host);
    let r = http(
        &b,
        "POST",
        &format!("/jobs/{id}/approve"),
        &[("Authorization", &auth), ("Origin", &origin)],
        &body,
    );
    assert_eq!(r.status, 409, "{}", r.body);
    let approvals = env
        .ok(&["job", "audit", &id, "--json", "--store", &url])
        .lines()
        .filter(|l| l.contains("\"approve\""))
        .count();
    assert_eq!(approvals, 1, "approved once");
}

/// A runner's steps reach an open job stream at once on PostgreSQL: while `serve` waits for
/// every change (its row in the `watchers` table), each advance of any runner announces
/// itself. EXECUTING is seen while the worker still sleeps — no other write of the step
/// (an artifact, an audit entry, each announced whatever happens) comes before the worker
/// ends, and the hub's safety-net read is a minute away.
#[test]
fn a_runners_steps_reach_an_open_job_stream_at_once() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    let env = Env::new();
    env.ok(&["store", "migrate", "--store", &url]);
    let reader = env
        .ok(&[
            "token", "create", "--name", "rita", "--scope", "read", "--store", &url,
        ])
        .trim()
        .to_string();
    let slow = "sh -c 'sleep 12; echo hi > f.txt'";
    let id = env.create(slow, DONE, &["--activate", "--store", &url]);
    let a = serve(&env, &["--store", url.as_str()]);
    let job = stream(&a.host, &format!("/jobs/{id}/events"), &bearer(&reader));
    // The runner's store learns of the new watcher within a second of its first look.
    std::thread::sleep(Duration::from_secs(2));
    let started = std::time::Instant::now();
    let mut runner = env
        .command(&["job", "run", "--store", &url])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The worker sleeps 12 s: seen within 10, it came from the EXECUTING advance itself.
    await_event(
        job,
        "job",
        "\"state\":\"EXECUTING\"",
        Duration::from_secs(10).saturating_sub(started.elapsed()),
    );
    assert!(runner.wait().unwrap().success());
    let shown = env.ok(&["job", "show", &id, "--json", "--store", &url]);
    assert!(shown.contains("\"APPROVAL_REQUIRED\""), "{shown}");
}
