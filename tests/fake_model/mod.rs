//! A scripted fake model server for driving the real agent CLIs offline.
//!
//! How it works: `FakeModel::start()` binds 127.0.0.1:0 and accepts on its own thread; each
//! connection gets a thread that serves requests until the client closes it (keep-alive). A
//! request to a model endpoint takes the next [`Reply`] from the test's queue (or, in the
//! directed mode, an answer derived from the request's own turn directives) and renders it in
//! that provider's wire format (Anthropic Messages, OpenAI Responses, Gemini, OpenAI Chat
//! Completions — see the sibling modules). Every request, model or not, is recorded (secrets
//! redacted) so a test can assert on what the CLI sent. Dropping the server wakes hung replies,
//! shuts every connection down and joins every thread, so no thread or port outlives a test.
#![allow(dead_code)]

mod answer;
mod anthropic;
mod chat;
mod conversation;
mod directed;
mod directive;
mod gemini;
mod http;
mod request;
mod responses;
#[cfg(test)]
mod server_tests;

pub use request::{Api, Request};

use answer::{Event, Part, default_parts, respond};
use serde_json::Value;
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
    /// Claude's `Bash` with `run_in_background: true` (the task re-invokes Claude when it ends);
    /// a plain [`Reply::Bash`] for the other CLIs.
    BgBash(String),
    /// A file write through the CLI's own write tool (Claude `Write`, Gemini `write_file`, Aider's
    /// whole-file edit format; Codex through its shell tool, which it has no plain write tool
    /// besides).
    Write { path: String, content: String },
    /// Any tool call, by the name the CLI offers it under, with these arguments (Claude's
    /// `Read`, which its `Write` wants before it overwrites a file).
    Call { name: String, args: Value },
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

/// State shared by the server's threads.
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    fallback: Mutex<Reply>,
    /// Answer from the request's directives instead of the fallback (see [`FakeModel::directed`]).
    directed: AtomicBool,
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
            directed: AtomicBool::new(false),
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

    /// Starts a server in the directed mode: a model request that finds the script empty is
    /// answered from the turn directives in its own conversation (`[[text:T]]`, `[[bash:CMD]]`,
    /// `[[bgbash:CMD]]`, `[[hang:S]]`, `[[ontool:SPEC]]`, `[[onnotify:SPEC]]`; see
    /// `directed.rs` and docs/agents-offline.md), so the answer does not depend on the order in
    /// which racing requests arrive. Replies pushed to the script still go first.
    pub fn directed() -> FakeModel {
        let m = FakeModel::start();
        m.shared.directed.store(true, Ordering::SeqCst);
        m
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

    /// How many model requests arrived so far.
    pub fn model_request_count(&self) -> usize {
        let reqs = self.shared.requests.lock().unwrap();
        reqs.iter().filter(|r| r.model_turn).count()
    }

    /// What the directed mode decided for each model request it answered, in arrival order
    /// (e.g. `hang 3.00s; reply to: first`, `bgbash: sleep 2`).
    pub fn decisions(&self) -> Vec<String> {
        let reqs = self.shared.requests.lock().unwrap();
        reqs.iter().filter_map(|r| r.decision.clone()).collect()
    }

    /// Waits until a model request satisfies `want`; that request, or `None` on timeout.
    pub fn wait_for_request(
        &self,
        timeout: Duration,
        want: impl Fn(&Request) -> bool,
    ) -> Option<Request> {
        let deadline = Instant::now() + timeout;
        let mut reqs = self.shared.requests.lock().unwrap();
        loop {
            if let Some(r) = reqs.iter().find(|r| r.model_turn && want(r)) {
                return Some(r.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            reqs = self.shared.arrived.wait_timeout(reqs, left).unwrap().0;
        }
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
            break;
        }
    }
    // The clone kept in `conns` holds the socket open: shut it, or a client that ended only
    // its sending side would wait for our end forever.
    let _ = w.shutdown(Shutdown::Both);
}
