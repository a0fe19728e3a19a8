//! The fake model server's own behaviour, over raw sockets (no CLI needed, so these always run):
//! keep-alive, chunked request bodies, recording with secrets redacted, each provider's stream
//! and error shapes, a cut stream, a hang released on drop.

use crate::fake_model::{Api, FakeModel, Reply};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A response read off the wire: status, lowercased headers, body (de-chunked), and whether a
/// chunked body ended with its terminating chunk.
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    complete: bool,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
    /// The `data:` payloads of an event stream, parsed as JSON where they are.
    fn events(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap_or(Value::String(d.into())))
            .collect()
    }
}

fn read_resp(r: &mut BufReader<TcpStream>) -> Resp {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        let (n, v) = line.split_once(':').unwrap();
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    let mut complete = true;
    if let Some(n) = get("content-length") {
        body.resize(n.parse().unwrap(), 0);
        r.read_exact(&mut body).unwrap();
    } else {
        complete = false;
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let size = usize::from_str_radix(line.trim(), 16).unwrap();
            if size == 0 {
                r.read_line(&mut line).unwrap();
                complete = true;
                break;
            }
            let start = body.len();
            body.resize(start + size + 2, 0);
            r.read_exact(&mut body[start..]).unwrap();
            body.truncate(start + size);
        }
    }
    Resp {
        status,
        headers,
        body: String::from_utf8(body).unwrap(),
        complete,
    }
}

fn connect(m: &FakeModel) -> (TcpStream, BufReader<TcpStream>) {
    let s = TcpStream::connect(("127.0.0.1", m.port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let r = BufReader::new(s.try_clone().unwrap());
    (s, r)
}

fn post(path: &str, body: &Value, extra: &str) -> String {
    let b = body.to_string();
    format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{b}",
        b.len()
    )
}

#[test]
fn keep_alive_serves_the_script_in_order_and_records_requests() {
    let m = FakeModel::with([Reply::Text("one".into()), Reply::Text("two".into())]);
    let (mut s, mut r) = connect(&m);
    let body = json!({"model": "claude-x", "stream": false, "messages": []});
    s.write_all(post("/v1/messages?beta=true", &body, "x-api-key: sk-secret\r\n").as_bytes())
        .unwrap();
    let a = read_resp(&mut r);
    // A second request on the same connection (keep-alive), and a telemetry-like one.
    s.write_all(post("/v1/messages", &body, "").as_bytes())
        .unwrap();
    let b = read_resp(&mut r);
    s.write_all(b"GET /api/hello?key=sk-secret HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    let c = read_resp(&mut r);
    assert_eq!((a.status, b.status, c.status), (200, 200, 200));
    assert_eq!(a.json()["content"][0]["text"], "one");
    assert_eq!(b.json()["content"][0]["text"], "two");
    assert_eq!(a.json()["model"], "claude-x");
    let reqs = m.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(m.model_requests().len(), 2);
    assert_eq!(reqs[0].api, Api::Anthropic);
    assert_eq!(reqs[0].header("x-api-key"), Some("<redacted>"));
    assert_eq!(reqs[2].api, Api::Other);
    assert_eq!(reqs[2].path, "/api/hello?key=<redacted>");
    assert!(!format!("{reqs:?}").contains("sk-secret"));
    assert_eq!(m.remaining(), 0);
}

#[test]
fn chunked_request_bodies_are_read() {
    let m = FakeModel::with([Reply::Text("ok".into())]);
    let (mut s, mut r) = connect(&m);
    let body =
        json!({"model": "m", "stream": false, "messages": [{"role": "user", "content": "hi"}]})
            .to_string();
    let (x, y) = body.split_at(10);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{x}\r\n{:x}\r\n{y}\r\n0\r\n\r\n",
        x.len(),
        y.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let resp = read_resp(&mut r);
    assert_eq!(resp.json()["choices"][0]["message"]["content"], "ok");
    assert_eq!(m.requests()[0].body["messages"][0]["content"], "hi");
}

#[test]
fn anthropic_stream_carries_tool_input_as_json_deltas() {
    let m = FakeModel::with([Reply::Bash("ls -la".into())]);
    let (mut s, mut r) = connect(&m);
    s.write_all(post("/v1/messages", &json!({"model": "c", "stream": true}), "").as_bytes())
        .unwrap();
    let resp = read_resp(&mut r);
    assert!(resp.complete);
    assert!(resp.body.contains("event: message_start"));
    let ev = resp.events();
    let types: Vec<_> = ev
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(types.first().unwrap(), "message_start");
    assert_eq!(types.last().unwrap(), "message_stop");
    let start = ev
        .iter()
        .find(|e| e["type"] == "content_block_start")
        .unwrap();
    assert_eq!(start["content_block"]["name"], "Bash");
    let input: String = ev
        .iter()
        .filter_map(|e| e["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap()["command"],
        "ls -la"
    );
    let delta = ev.iter().find(|e| e["type"] == "message_delta").unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
}

#[test]
fn errors_use_each_providers_body_shape() {
    let m = FakeModel::with([
        Reply::Status(529),
        Reply::Status(401),
        Reply::Status(429),
        Reply::Status(500),
    ]);
    let (mut s, mut r) = connect(&m);
    s.write_all(post("/v1/messages", &json!({}), "").as_bytes())
        .unwrap();
    let a = read_resp(&mut r);
    assert_eq!(a.status, 529);
    assert_eq!(a.json()["error"]["type"], "overloaded_error");
    s.write_all(post("/v1/responses", &json!({}), "").as_bytes())
        .unwrap();
    let b = read_resp(&mut r);
    assert_eq!(b.status, 401);
    assert_eq!(b.json()["error"]["code"], "invalid_api_key");
    s.write_all(
        post(
            "/v1beta/models/g:streamGenerateContent?alt=sse",
            &json!({}),
            "",
        )
        .as_bytes(),
    )
    .unwrap();
    let c = read_resp(&mut r);
    assert_eq!(c.status, 429);
    assert_eq!(c.json()["error"]["status"], "RESOURCE_EXHAUSTED");
    s.write_all(post("/v1/chat/completions", &json!({}), "").as_bytes())
        .unwrap();
    let d = read_resp(&mut r);
    assert_eq!(d.status, 500);
    assert!(d.headers.iter().any(|(n, _)| n == "retry-after"));
}

#[test]
fn a_cut_stream_ends_without_its_terminating_chunk() {
    let m = FakeModel::with([Reply::Cut("partial".into())]);
    let (mut s, mut r) = connect(&m);
    s.write_all(post("/v1/responses", &json!({"model": "g"}), "").as_bytes())
        .unwrap();
    let resp = read_resp(&mut r);
    assert!(!resp.complete, "{}", resp.body);
    let ev = resp.events();
    assert_eq!(ev.last().unwrap()["delta"], "partial");
    assert!(!resp.body.contains("response.completed"));
}

#[test]
fn gemini_and_chat_streams_end_as_their_clients_expect() {
    let m = FakeModel::with([Reply::Json(json!({"ok": true})), Reply::Text("hey".into())]);
    let (mut s, mut r) = connect(&m);
    s.write_all(
        post(
            "/v1beta/models/g:streamGenerateContent?alt=sse",
            &json!({}),
            "",
        )
        .as_bytes(),
    )
    .unwrap();
    let g = read_resp(&mut r).events();
    assert_eq!(
        g[0]["candidates"][0]["content"]["parts"][0]["text"],
        r#"{"ok":true}"#
    );
    assert_eq!(g.last().unwrap()["candidates"][0]["finishReason"], "STOP");
    s.write_all(post("/v1/chat/completions", &json!({"stream": true}), "").as_bytes())
        .unwrap();
    let c = read_resp(&mut r).events();
    assert_eq!(c[1]["choices"][0]["delta"]["content"], "hey");
    assert_eq!(c.last().unwrap(), "[DONE]");
}

#[test]
fn a_hang_is_released_when_the_server_drops() {
    let m = FakeModel::with([Reply::Hang]);
    let (mut s, mut r) = connect(&m);
    s.write_all(post("/v1/messages", &json!({}), "").as_bytes())
        .unwrap();
    assert!(m.wait_for_model_requests(1, Duration::from_secs(5)));
    let start = Instant::now();
    drop(m);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "drop joined its threads promptly"
    );
    let mut rest = String::new();
    assert_eq!(
        r.read_to_string(&mut rest).unwrap_or(0),
        0,
        "no answer, connection closed"
    );
}

#[test]
fn the_fallback_answers_once_the_script_is_exhausted() {
    let m = FakeModel::start();
    m.set_fallback(Reply::Status(503));
    let (mut s, mut r) = connect(&m);
    for _ in 0..2 {
        s.write_all(post("/v1/messages", &json!({}), "").as_bytes())
            .unwrap();
        assert_eq!(read_resp(&mut r).status, 503);
    }
    assert_eq!(m.model_requests().len(), 2);
}

#[test]
fn head_requests_get_no_body_and_keep_the_connection_usable() {
    let m = FakeModel::with([Reply::Text("after head".into())]);
    let (mut s, mut r) = connect(&m);
    s.write_all(b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    let h = read_resp(&mut r);
    assert_eq!((h.status, h.body.as_str()), (200, ""));
    s.write_all(post("/v1/messages", &json!({"stream": false}), "").as_bytes())
        .unwrap();
    assert_eq!(read_resp(&mut r).json()["content"][0]["text"], "after head");
}
