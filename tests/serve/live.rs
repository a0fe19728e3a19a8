//! The dashboard's live stream over HTTP, through the real binary: a job page's stream while a
//! real runner runs a command worker carries each log line once, in order; a reconnect with
//! `Last-Event-ID` — to the same server or to one restarted on its port — resumes with nothing
//! missing or doubled; a finished job's stream is the same replay from the store; and what the
//! stream carried is what the page shows.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::job_env;
use crate::serve_process;
use job_env::{DONE, Env};
use serve_process::{Server, serve, serve_at};

/// One server-sent event.
#[derive(Debug, Clone, Default)]
struct Ev {
    id: Option<String>,
    event: String,
    data: String,
}

impl Ev {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

/// A stream read over HTTP/1.0, so the body is the events themselves (no chunking).
struct Stream {
    status: u16,
    reader: BufReader<TcpStream>,
}

fn open(s: &Server, path: &str, token: &str, last_id: Option<&str>) -> Stream {
    let conn = TcpStream::connect(&s.host).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut req = format!(
        "GET {path} HTTP/1.0\r\nHost: {}\r\nAccept: text/event-stream\r\n",
        s.host
    );
    if !token.is_empty() {
        req.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(id) = last_id {
        req.push_str(&format!("Last-Event-ID: {id}\r\n"));
    }
    req.push_str("\r\n");
    (&conn).write_all(req.as_bytes()).unwrap();
    let mut reader = BufReader::new(conn);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    loop {
        let mut l = String::new();
        if reader.read_line(&mut l).unwrap() == 0 || l == "\r\n" {
            break;
        }
    }
    Stream { status, reader }
}

impl Stream {
    /// The next event (comments and the retry field skipped); `None` when the stream ends.
    fn next(&mut self) -> Option<Ev> {
        let mut ev = Ev::default();
        let mut any = false;
        loop {
            let mut l = String::new();
            if self.reader.read_line(&mut l).ok()? == 0 {
                return None;
            }
            let l = l.trim_end_matches(['\n', '\r']);
            if l.is_empty() {
                if any {
                    return Some(ev);
                }
                continue;
            }
            if let Some(v) = l.strip_prefix("id:") {
                ev.id = Some(v.trim_start().to_string());
            } else if let Some(v) = l.strip_prefix("event:") {
                ev.event = v.trim_start().to_string();
                any = true;
            } else if let Some(v) = l.strip_prefix("data:") {
                if !ev.data.is_empty() {
                    ev.data.push('\n');
                }
                ev.data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
    }
}

fn token(env: &Env, name: &str, scope: &str) -> String {
    env.ok(&["token", "create", "--name", name, "--scope", scope])
        .trim()
        .to_string()
}

/// The page of `id` as `token` sees it.
fn page(s: &Server, id: &str, token: &str) -> String {
    let conn = TcpStream::connect(&s.host).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    (&conn)
        .write_all(
            format!(
                "GET /jobs/{id} HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\r\n",
                s.host
            )
            .as_bytes(),
        )
        .unwrap();
    let mut body = String::new();
    std::io::Read::read_to_string(&mut &conn, &mut body).unwrap();
    body
}

/// The entries whose lines a page shows, in order.
fn page_entries(page: &str) -> Vec<u64> {
    page.match_indices("data-entry=\"")
        .map(|(i, m)| {
            let rest = &page[i + m.len()..];
            rest[..rest.find('"').unwrap()].parse().unwrap()
        })
        .collect()
}

/// Reads `stream` until the job rests, gathering the entries of its line events; whether it
/// got there (false: the stream ended first, or `stop` lines arrived).
fn gather(stream: &mut Stream, lines: &mut Vec<u64>, last_id: &mut String, stop: usize) -> bool {
    let mut read = 0;
    while let Some(ev) = stream.next() {
        if let Some(id) = &ev.id {
            *last_id = id.clone();
        }
        match ev.event.as_str() {
            "line" => {
                lines.push(ev.json()["entry"].as_u64().unwrap());
                read += 1;
                if read == stop {
                    return false;
                }
            }
            "job" if ev.json()["state"] == "APPROVAL_REQUIRED" => return true,
            _ => {}
        }
    }
    false
}

#[test]
fn a_job_stream_carries_each_line_once_across_reconnects_and_a_restart() {
    let env = Env::new();
    let read = token(&env, "watcher", "read");
    let worker = "sh -c 'for i in $(seq 1 40); do echo line $i; sleep 0.05; done; echo hi > f.txt'";
    let id = env.create(worker, DONE, &["--activate"]);
    let server = serve(&env, &[]);

    // Without a token the stream is refused like any page.
    assert_eq!(
        open(&server, &format!("/jobs/{id}/events"), "", None).status,
        401
    );
    assert_eq!(
        open(&server, "/jobs/job-nope/events", &read, None).status,
        404
    );

    let mut runner = env
        .command(&["job", "run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (mut lines, mut last_id) = (Vec::new(), String::new());
    let path = format!("/jobs/{id}/events?after=0.0");
    let mut s = open(&server, &path, &read, None);
    assert_eq!(s.status, 200);
    // A few lines, then the connection drops; the reconnect names the last event it had.
    assert!(!gather(&mut s, &mut lines, &mut last_id, 5));
    drop(s);
    let mut s = open(&server, &path, &read, Some(&last_id));
    assert!(!gather(&mut s, &mut lines, &mut last_id, 5));
    drop(s);

    // The server restarts on its port mid-run; the reader comes back with its last id.
    let host = server.host.clone();
    drop(server);
    let server = serve_at(&env, &host, &[]);
    let mut s = open(&server, &path, &read, Some(&last_id));
    let t = Instant::now();
    assert!(
        gather(&mut s, &mut lines, &mut last_id, usize::MAX),
        "the stream ended before the job rested ({:?})",
        t.elapsed()
    );
    assert!(runner.wait().unwrap().success());

    let shown = page_entries(&page(&server, &id, &read));
    assert!(shown.len() >= 40, "{shown:?}");
    assert_eq!(
        lines, shown,
        "the stream carried what the page shows, once, in order"
    );

    // A finished job's stream is the replay from the store, whoever asks.
    let mut s = open(
        &server,
        &format!("/jobs/{id}/events?after=0.0"),
        &read,
        None,
    );
    let mut replayed = Vec::new();
    assert!(gather(&mut s, &mut replayed, &mut last_id, usize::MAX));
    assert_eq!(replayed, shown);
}

#[test]
fn a_revoked_token_s_open_stream_is_told_and_ends_and_its_reconnect_is_refused() {
    let env = Env::new();
    let read = token(&env, "watcher", "read");
    let other = token(&env, "other", "read");
    let id = env.job_in("PENDING");
    let server = serve(&env, &[]);
    let mut board = open(&server, "/events", &read, None);
    let mut page = open(&server, &format!("/jobs/{id}/events"), &read, None);
    let mut kept = open(&server, "/events", &other, None);
    for s in [&board, &page, &kept] {
        assert_eq!(s.status, 200);
    }
    let t = Instant::now();
    env.ok(&["token", "revoke", "watcher"]);
    for s in [&mut board, &mut page] {
        let ev = s.next().expect("an event before the end");
        assert_eq!(ev.event, "signedout", "{ev:?}");
        assert!(s.next().is_none(), "the stream ends there");
    }
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(open(&server, "/events", &read, None).status, 401);
    // Another token's stream goes on: a job made now still reaches it.
    let made = env.job_in("PENDING");
    let ev = kept.next().expect("the other token's stream is open");
    assert_eq!(ev.event, "board", "{ev:?}");
    assert_eq!(ev.json()["job"], made.as_str());
}
