//! Plain HTTP/1.1 to a `oneshot serve` for tests: one request, its response read whole; the
//! token and form helpers the route tests share.
#![allow(dead_code)]

use super::job_env::{DONE, Env};
use super::serve_process::Server;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// An HTTP response, read whole.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

/// One request to the server at `s.host`, with `headers` as given (a `Host` among them
/// replaces the right one).
pub fn http(s: &Server, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
    let mut conn = TcpStream::connect(&s.host).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    exchange(&mut conn, &s.host, method, path, headers, body)
}

/// Sends a request over `conn` (`Host: host` unless `headers` say otherwise) and reads the
/// response whole.
pub fn exchange(
    conn: &mut (impl Read + Write),
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Resp {
    conn.write_all(request(host, method, path, headers, body).as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    if let Err(e) = conn.read_to_end(&mut raw) {
        // A TLS stream may end without close_notify once the response is in.
        assert!(!raw.is_empty(), "no response: {e}");
    }
    response(&String::from_utf8_lossy(&raw))
}

/// An HTTP/1.1 request's text.
pub fn request(
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {host}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if method == "POST" {
        req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    req
}

/// A response's text, parsed.
pub fn response(raw: &str) -> Resp {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head}"));
    Resp {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The value of hidden input `name` in the first form of a page.
pub fn field(page: &str, name: &str) -> String {
    let at = page
        .find(&format!("name=\"{name}\" value=\""))
        .unwrap_or_else(|| panic!("no {name} in {page}"));
    let rest = &page[at + name.len() + 15..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// A form body from pairs, urlencoded the way a browser does it.
pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            let enc: String = v
                .bytes()
                .map(|b| match b {
                    b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                        (b as char).to_string()
                    }
                    b' ' => "+".to_string(),
                    b => format!("%{b:02X}"),
                })
                .collect();
            format!("{k}={enc}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

pub fn token(env: &Env, name: &str, scope: &str) -> String {
    env.ok(&["token", "create", "--name", name, "--scope", scope])
        .trim()
        .to_string()
}

/// A job resting in APPROVAL_REQUIRED, stepped by the real runner.
pub fn waiting(env: &Env, worker: &str) -> String {
    let id = env.create(worker, DONE, &["--activate"]);
    env.ok(&["job", "step", &id]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    id
}

pub fn audit(env: &Env, id: &str) -> Vec<serde_json::Value> {
    env.ok(&["job", "audit", id, "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
