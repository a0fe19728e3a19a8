//! A scripted fake model server for driving the real agent CLIs offline.
//!
//! How it works: `FakeModel::start()` binds 127.0.0.1:0 and accepts on its own thread; each
//! connection gets a thread that serves requests until the client closes it (keep-alive). A
//! request to a model endpoint takes the next [`Reply`] from the test's queue and renders it in
//! that provider's wire format (Anthropic Messages, OpenAI Responses, Gemini, OpenAI Chat
//! Completions — see the sibling modules). Every request, model or not, is recorded (secrets
//! redacted) so a test can assert on what the CLI sent. Dropping the server wakes hung replies,
//! shuts every connection down and joins every thread, so no thread or port outlives a test.
#![allow(dead_code)]

mod anthropic;
mod chat;
mod gemini;
mod http;
mod responses;

use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::BufReader;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One scripted model turn. Each model request takes the next one from the queue.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A plain assistant text answer that ends the turn.
    Text(String),
    /// A shell command through the CLI's own shell tool (Claude `Bash`, Codex `exec_command` or
    /// `shell`, Gemini `run_shell_command`).
    Bash(String),
    /// A file write through the CLI's own write tool (Claude `Write`, Gemini `write_file`, Aider's
    /// whole-file edit format; Codex through its shell tool, which it has no plain write tool
    /// besides).
    Write { path: String, content: String },
    /// A JSON answer: Claude's `StructuredOutput` tool when the request offers it (`--json-schema`),
    /// otherwise the JSON as the answer's text.
    Json(Value),
    /// An HTTP error with the provider's own error body (401, 429, 500, 529, …).
    Status(u16),
    /// Never answers; the connection is released when the server is dropped.
    Hang,
    /// Starts streaming this text, then drops the connection before the stream's end.
    Cut(String),
}

/// Which wire protocol a request spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/messages` (Claude Code).
    Anthropic,
    /// `POST /v1/responses` (Codex).
    Responses,
    /// `…:streamGenerateContent` / `…:generateContent` (Gemini CLI).
    Gemini,
    /// `POST /v1/chat/completions` (Aider through litellm).
    Chat,
    /// Anything else (telemetry, model lists, token counts): answered harmlessly.
    Other,
}

/// A request as the server received it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// Path and query, with any `key=` query parameter redacted.
    pub path: String,
    /// Lowercased names; credentials replaced by `<redacted>`.
    pub headers: Vec<(String, String)>,
    /// The JSON body, or `Value::Null` when there is none or it is not JSON.
    pub body: Value,
    pub api: Api,
    /// True when this request took a reply from the script.
    pub model_turn: bool,
}

impl Request {
    /// The value of a header (name in lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The whole body as JSON text, for `contains` checks on what the CLI sent back.
    pub fn body_text(&self) -> String {
        self.body.to_string()
    }

    /// How many times `needle` occurs in the body's JSON text (e.g. the prompt must appear once).
    pub fn count(&self, needle: &str) -> usize {
        self.body_text().matches(needle).count()
    }

    /// The names of the tools the CLI offered the model, whatever the API's shape.
    pub fn tool_names(&self) -> Vec<String> {
        tool_names(&self.body)
    }
}

/// Names of the tools a request body offers, across the four APIs' shapes.
fn tool_names(body: &Value) -> Vec<String> {
    let mut names = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        // Anthropic and Responses: `name`; Chat: `function.name`; Gemini: functionDeclarations.
        for n in [&tool["name"], &tool["function"]["name"]] {
            if let Some(n) = n.as_str() {
                names.push(n.to_string());
            }
        }
        for decl in tool["functionDeclarations"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(n) = decl["name"].as_str() {
                names.push(n.to_string());
            }
        }
    }
    names
}

/// What a provider module produces for one turn: text and tool calls, in order.
#[derive(Clone, Debug)]
enum Part {
    Text(String),
    Call { name: String, args: Value },
}

/// State shared by the server's threads.
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    fallback: Mutex<Reply>,
    requests: Mutex<Vec<Request>>,
    arrived: Condvar,
    stopping: AtomicBool,
    /// Hung replies wait on this until the server stops.
    stop_lock: Mutex<()>,
    stopped: Condvar,
    /// Clones of open connections, shut down on drop to unblock their readers.
    conns: Mutex<Vec<TcpStream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    ids: AtomicU64,
}

impl Shared {
    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// The fake server. Scripted with [`FakeModel::push`]; stopped when dropped.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl FakeModel {
    /// Starts a server on 127.0.0.1 with an empty script. When the script runs out, every model
    /// request gets the fallback (by default a text saying so, which a test's assertions catch).
    pub fn start() -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            script: Mutex::new(VecDeque::new()),
            fallback: Mutex::new(Reply::Text("fake model: script exhausted".into())),
            requests: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            stopping: AtomicBool::new(false),
            stop_lock: Mutex::new(()),
            stopped: Condvar::new(),
            conns: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            ids: AtomicU64::new(0),
        });
        let s = shared.clone();
        let accept = std::thread::spawn(move || accept_loop(listener, s));
        FakeModel {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// Starts a server whose script is `replies`.
    pub fn with(replies: impl IntoIterator<Item = Reply>) -> FakeModel {
        let m = FakeModel::start();
        for r in replies {
            m.push(r);
        }
        m
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: Reply) {
        self.shared.script.lock().unwrap().push_back(reply);
    }

    /// Sets the reply used once the script is exhausted (e.g. `Status(500)` for "always fails").
    pub fn set_fallback(&self, reply: Reply) {
        *self.shared.fallback.lock().unwrap() = reply;
    }

    /// `http://127.0.0.1:PORT`, with no trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The requests that took a scripted reply (the model turns), in order.
    pub fn model_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.model_turn)
            .collect()
    }

    /// How many scripted replies are still queued.
    pub fn remaining(&self) -> usize {
        self.shared.script.lock().unwrap().len()
    }

    /// Waits until at least `n` model requests arrived; false on timeout.
    pub fn wait_for_model_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut reqs = self.shared.requests.lock().unwrap();
        loop {
            if reqs.iter().filter(|r| r.model_turn).count() >= n {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            reqs = self.shared.arrived.wait_timeout(reqs, left).unwrap().0;
        }
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        {
            let _g = self.shared.stop_lock.lock().unwrap();
            self.shared.stopped.notify_all();
        }
        // Wake the blocking accept() with a connection of our own.
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
        for c in self.shared.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
        let threads: Vec<_> = self.shared.threads.lock().unwrap().drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let Ok(clone) = stream.try_clone() else {
            continue;
        };
        shared.conns.lock().unwrap().push(clone);
        let s = shared.clone();
        let t = std::thread::spawn(move || serve(stream, s));
        shared.threads.lock().unwrap().push(t);
    }
}

fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut w = stream;
    while let Ok(Some(raw)) = http::read_request(&mut reader, &mut w) {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let keep = respond(&raw, &mut w, &shared);
        if !keep.unwrap_or(false) {
            let _ = w.shutdown(Shutdown::Both);
            return;
        }
    }
}

fn classify(method: &str, path: &str) -> Api {
    let p = path.split('?').next().unwrap_or(path);
    if method != "POST" {
        Api::Other
    } else if p.ends_with("/messages") {
        Api::Anthropic
    } else if p.ends_with("/responses") {
        Api::Responses
    } else if p.ends_with(":streamGenerateContent") || p.ends_with(":generateContent") {
        Api::Gemini
    } else if p.ends_with("/chat/completions") {
        Api::Chat
    } else {
        Api::Other
    }
}

const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "cookie",
    "proxy-authorization",
];

fn redact_query(target: &str) -> String {
    let Some((path, query)) = target.split_once('?') else {
        return target.to_string();
    };
    let q: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("key") => format!("{k}=<redacted>"),
            _ => kv.to_string(),
        })
        .collect();
    format!("{path}?{}", q.join("&"))
}

/// Records the request, answers it; returns whether the connection stays open.
fn respond(raw: &http::RawRequest, w: &mut TcpStream, shared: &Shared) -> std::io::Result<bool> {
    let api = classify(&raw.method, &raw.target);
    let body: Value = serde_json::from_slice(&raw.body).unwrap_or(Value::Null);
    let model_turn = api != Api::Other && !raw.target.contains("count_tokens");
    let reply = if model_turn {
        let next = shared.script.lock().unwrap().pop_front();
        Some(next.unwrap_or_else(|| shared.fallback.lock().unwrap().clone()))
    } else {
        None
    };
    let headers = raw
        .headers
        .iter()
        .map(|(n, v)| {
            let v = if SECRET_HEADERS.contains(&n.as_str()) {
                "<redacted>".into()
            } else {
                v.clone()
            };
            (n.clone(), v)
        })
        .collect();
    let req = Request {
        method: raw.method.clone(),
        path: redact_query(&raw.target),
        headers,
        body,
        api,
        model_turn,
    };
    {
        let mut all = shared.requests.lock().unwrap();
        all.push(req.clone());
        shared.arrived.notify_all();
    }
    let Some(reply) = reply else {
        // Harmless answers: a token count for the count endpoints, an empty list or object
        // otherwise (telemetry, model lists, update checks).
        let body = if raw.target.contains("count_tokens") || raw.target.contains("countTokens") {
            json!({"input_tokens": 100, "totalTokens": 100})
        } else if raw.target.contains("/models") {
            json!({"object": "list", "data": [], "models": []})
        } else {
            json!({})
        };
        // A HEAD answer has no body (Claude Code sends `HEAD /` as a connectivity check); one
        // would be read as the start of the next response on this keep-alive connection.
        let body = if raw.method == "HEAD" {
            String::new()
        } else {
            body.to_string()
        };
        http::write_full(w, 200, &[], body.as_bytes())?;
        return Ok(true);
    };
    match reply {
        Reply::Hang => {
            let mut g = shared.stop_lock.lock().unwrap();
            while !shared.stopping.load(Ordering::SeqCst) {
                g = shared.stopped.wait(g).unwrap();
            }
            Ok(false)
        }
        Reply::Status(code) => {
            let body = error_body(api, code);
            // A zero retry-after keeps the CLIs' own retries fast in tests.
            http::write_full(
                w,
                code,
                &[("retry-after", "0".into())],
                body.to_string().as_bytes(),
            )?;
            Ok(true)
        }
        Reply::Cut(text) => {
            let parts = vec![Part::Text(text)];
            let mut sse = http::Sse::start(w)?;
            render_stream(api, &req, &parts, shared, &mut sse, true)?;
            // No terminating chunk: the client sees the body end early.
            Ok(false)
        }
        other => {
            let parts = to_parts(api, &req, &other);
            if wants_stream(api, &req) {
                let mut sse = http::Sse::start(w)?;
                render_stream(api, &req, &parts, shared, &mut sse, false)?;
                sse.finish()?;
            } else {
                let body = render_whole(api, &req, &parts, shared);
                http::write_full(w, 200, &[], body.to_string().as_bytes())?;
            }
            Ok(true)
        }
    }
}

fn wants_stream(api: Api, req: &Request) -> bool {
    match api {
        Api::Gemini => req.path.contains(":streamGenerateContent"),
        Api::Responses => req.body["stream"].as_bool().unwrap_or(true),
        _ => req.body["stream"].as_bool().unwrap_or(false),
    }
}

fn to_parts(api: Api, req: &Request, reply: &Reply) -> Vec<Part> {
    match api {
        Api::Anthropic => anthropic::parts(req, reply),
        Api::Responses => responses::parts(req, reply),
        Api::Gemini => gemini::parts(req, reply),
        _ => chat::parts(req, reply),
    }
}

/// `cut`: stop after the first text delta, leaving the stream unterminated.
fn render_stream(
    api: Api,
    req: &Request,
    parts: &[Part],
    shared: &Shared,
    sse: &mut http::Sse,
    cut: bool,
) -> std::io::Result<()> {
    let id = shared.next_id();
    let events = match api {
        Api::Anthropic => anthropic::stream(req, parts, id),
        Api::Responses => responses::stream(req, parts, id),
        Api::Gemini => gemini::stream(req, parts, id),
        _ => chat::stream(req, parts, id),
    };
    for ev in &events {
        // Chat Completions ends with a bare `[DONE]` marker, which is not JSON.
        let data = if ev.data.is_null() {
            "[DONE]".to_string()
        } else {
            ev.data.to_string()
        };
        sse.event(ev.name, &data)?;
        if cut && ev.is_delta {
            return Ok(());
        }
    }
    Ok(())
}

fn render_whole(api: Api, req: &Request, parts: &[Part], shared: &Shared) -> Value {
    let id = shared.next_id();
    match api {
        Api::Anthropic => anthropic::whole(req, parts, id),
        Api::Gemini => gemini::whole(req, parts, id),
        _ => chat::whole(req, parts, id),
    }
}

fn error_body(api: Api, code: u16) -> Value {
    let message = format!("fake {code}");
    match api {
        Api::Anthropic => anthropic::error(code, &message),
        Api::Gemini => gemini::error(code, &message),
        _ => chat::error(code, &message),
    }
}

/// One server-sent event, as a provider module renders it.
struct Event {
    /// The `event:` line (Anthropic and Responses name their events; the others do not).
    name: Option<&'static str>,
    data: Value,
    /// A text delta: where a [`Reply::Cut`] stops.
    is_delta: bool,
}

impl Event {
    fn named(name: &'static str, data: Value) -> Event {
        Event {
            name: Some(name),
            data,
            is_delta: false,
        }
    }
    fn data(data: Value) -> Event {
        Event {
            name: None,
            data,
            is_delta: false,
        }
    }
    fn delta(mut self) -> Event {
        self.is_delta = true;
        self
    }
}

/// The usual mapping of a reply onto parts for APIs with named shell/write tools.
fn default_parts(reply: &Reply, shell: Part, write: Part) -> Vec<Part> {
    match reply {
        Reply::Text(t) | Reply::Cut(t) => vec![Part::Text(t.clone())],
        Reply::Json(v) => vec![Part::Text(v.to_string())],
        Reply::Bash(_) => vec![shell],
        Reply::Write { .. } => vec![write],
        Reply::Status(_) | Reply::Hang => Vec::new(),
    }
}
