//! Several `oneshot serve` processes on one PostgreSQL store (a temporary cluster,
//! tests/common/pg_server.rs): sign-ins, verbs and live streams agree across them.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

#[path = "common/job_env.rs"]
mod job_env;
#[path = "common/pg_server.rs"]
mod pg_server;
#[path = "common/serve_http.rs"]
mod serve_http;
#[path = "common/serve_process.rs"]
mod serve_process;
use job_env::{DONE, Env, GOOD_WORKER};
use serve_http::*;
use serve_process::serve;

/// Reads a server-sent-event stream until an event named `name` whose data holds `needle`.
fn await_event(conn: TcpStream, name: &str, needle: &str) -> String {
    use std::io::BufRead;
    let mut r = std::io::BufReader::new(conn);
    let (mut event, mut l) = (String::new(), String::new());
    loop {
        l.clear();
        assert!(
            r.read_line(&mut l).unwrap() > 0,
            "the stream ended before {name} {needle}"
        );
        if let Some(v) = l.trim_end().strip_prefix("event: ") {
            event = v.to_string();
        } else if let Some(v) = l.trim_end().strip_prefix("data: ")
            && event == name
            && v.contains(needle)
        {
            return v.to_string();
        }
    }
}

/// An open stream at `path` of the server at `host`.
fn stream(host: &str, path: &str, auth: &str) -> TcpStream {
    let mut conn = TcpStream::connect(host).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
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
    let seen = await_event(job_on_b, "job", "SUCCESS");
    assert!(seen.contains("\"state\":\"SUCCESS\""), "{seen}");
    await_event(board_on_a, "board", &id);
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
