//! The directed mode over real HTTP, without a CLI: an answer derived from the request, the
//! request count at `GET /_fake/requests`, and a long `[[hang:S]]` released when the server is
//! dropped (no thread outlives it).

use super::FakeModel;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// One request on a fresh connection, then the end of our side; the response's body.
fn call(port: u16, method: &str, path: &str, body: &Value) -> String {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = body.to_string();
    write!(
        c,
        "{method} {path} HTTP/1.1\r\nhost: x\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // The server keeps connections alive; the end of our side is what ends its.
    c.shutdown(Shutdown::Write).unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

fn messages(text: &str) -> Value {
    json!({"model": "m", "messages": [{"role": "user", "content": text}]})
}

#[test]
fn directed_answers_count_and_a_hang_released_by_drop() {
    let model = FakeModel::directed();
    let port = model.port();
    let body = call(
        port,
        "POST",
        "/v1/messages",
        &messages("hi [[text:hello there]]"),
    );
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{body}"));
    assert_eq!(v["content"][0]["text"], "hello there", "{v}");
    let body = call(
        port,
        "POST",
        "/v1/messages",
        &messages("[[bgbash:sleep 1]]"),
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["content"][0]["input"]["run_in_background"], true, "{v}");

    let hung = std::thread::spawn(move || {
        call(port, "POST", "/v1/messages", &messages("wait [[hang:60]]"))
    });
    assert!(model.wait_for_model_requests(3, Duration::from_secs(10)));
    let count = call(port, "GET", "/_fake/requests", &json!({}));
    assert_eq!(count, r#"{"model_requests":3}"#);
    assert_eq!(model.model_request_count(), 3);
    assert_eq!(model.decisions()[2], "hang 60.00s; reply to: wait");

    let t = Instant::now();
    drop(model);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(hung.join().unwrap(), "", "the hung request got no answer");
}
