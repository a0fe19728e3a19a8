//! Answering one request: a harmless reply for non-model endpoints, otherwise the next scripted
//! [`Reply`] (or the directed mode's plan, after its hang) by the provider module of the request's API (streamed or whole), an error
//! status, a hang, or a stream cut short.

use super::directive::Action;
use super::request::{Api, Request};
use super::{
    Reply, Shared, anthropic, chat, conversation, directed, gemini, http, request, responses,
};
use serde_json::{Value, json};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What a provider module produces for one turn: text and tool calls, in order.
#[derive(Clone, Debug)]
pub(super) enum Part {
    Text(String),
    Call { name: String, args: Value },
}

/// What a model request gets: the next scripted reply, or the directed mode's plan.
enum Answer {
    Scripted(Reply),
    Directed(directed::Plan),
}

/// The answer to a model request: the script first, then the directed mode or the fallback.
fn choose(req: &Request, shared: &Shared) -> Answer {
    if let Some(next) = shared.script.lock().unwrap().pop_front() {
        return Answer::Scripted(next);
    }
    if shared.directed.load(Ordering::SeqCst) {
        return Answer::Directed(directed::decide(&conversation::items(req)));
    }
    Answer::Scripted(shared.fallback.lock().unwrap().clone())
}

/// Records the request, answers it; returns whether the connection stays open.
pub(super) fn respond(
    raw: &http::RawRequest,
    w: &mut TcpStream,
    shared: &Shared,
) -> std::io::Result<bool> {
    let mut req = request::record(raw);
    let api = req.api;
    let answer = req.model_turn.then(|| choose(&req, shared));
    if let Some(Answer::Directed(plan)) = &answer {
        req.decision = Some(plan.describe());
    }
    let model_requests = {
        let mut all = shared.requests.lock().unwrap();
        all.push(req.clone());
        shared.arrived.notify_all();
        all.iter().filter(|r| r.model_turn).count()
    };
    let reply = match answer {
        None => return harmless(raw, w, model_requests),
        Some(Answer::Scripted(reply)) => reply,
        Some(Answer::Directed(plan)) => {
            if !hang(shared, plan.hang) {
                return Ok(false);
            }
            let parts: Vec<Part> = plan
                .actions
                .iter()
                .flat_map(|a| to_parts(api, &req, &directed_reply(a)))
                .collect();
            return complete(api, &req, &parts, shared, w);
        }
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
            complete(api, &req, &parts, shared, w)
        }
    }
}

/// Harmless answers to what is no model turn: a token count for the count endpoints, an empty
/// list or object otherwise (telemetry, model lists, update checks), and the model request
/// count at `GET /_fake/requests`.
fn harmless(
    raw: &http::RawRequest,
    w: &mut TcpStream,
    model_requests: usize,
) -> std::io::Result<bool> {
    let body = if raw.target == "/_fake/requests" {
        json!({"model_requests": model_requests})
    } else if raw.target.contains("count_tokens") || raw.target.contains("countTokens") {
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
    Ok(true)
}

/// Waits `d`, or less when the server stops; false when it stopped (the answer is dropped).
fn hang(shared: &Shared, d: Duration) -> bool {
    let deadline = Instant::now() + d;
    let mut g = shared.stop_lock.lock().unwrap();
    loop {
        if shared.stopping.load(Ordering::SeqCst) {
            return false;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        g = shared.stopped.wait_timeout(g, left).unwrap().0;
    }
}

/// A directed action as the reply the provider modules render.
fn directed_reply(a: &Action) -> Reply {
    match a {
        Action::Text(t) => Reply::Text(t.clone()),
        Action::Bash(c) => Reply::Bash(c.clone()),
        Action::BgBash(c) => Reply::BgBash(c.clone()),
    }
}

/// A complete answer made of `parts`, streamed or whole as the request asked.
fn complete(
    api: Api,
    req: &Request,
    parts: &[Part],
    shared: &Shared,
    w: &mut TcpStream,
) -> std::io::Result<bool> {
    if wants_stream(api, req) {
        let mut sse = http::Sse::start(w)?;
        render_stream(api, req, parts, shared, &mut sse, false)?;
        sse.finish()?;
    } else {
        let body = render_whole(api, req, parts, shared);
        http::write_full(w, 200, &[], body.to_string().as_bytes())?;
    }
    Ok(true)
}

fn wants_stream(api: Api, req: &Request) -> bool {
    match api {
        Api::Gemini => req.path.contains(":streamGenerateContent"),
        // Codex only speaks the streaming form; there is no whole-response rendering for it.
        Api::Responses => true,
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
pub(super) struct Event {
    /// The `event:` line (Anthropic and Responses name their events; the others do not).
    pub(super) name: Option<&'static str>,
    pub(super) data: Value,
    /// A text delta: where a [`Reply::Cut`] stops.
    pub(super) is_delta: bool,
}

impl Event {
    pub(super) fn named(name: &'static str, data: Value) -> Event {
        Event {
            name: Some(name),
            data,
            is_delta: false,
        }
    }
    pub(super) fn data(data: Value) -> Event {
        Event {
            name: None,
            data,
            is_delta: false,
        }
    }
    pub(super) fn delta(mut self) -> Event {
        self.is_delta = true;
        self
    }
}

/// The usual mapping of a reply onto parts for APIs with named shell/write tools.
pub(super) fn default_parts(reply: &Reply, shell: Part, write: Part) -> Vec<Part> {
    match reply {
        Reply::Text(t) | Reply::Cut(t) => vec![Part::Text(t.clone())],
        Reply::Json(v) => vec![Part::Text(v.to_string())],
        Reply::Bash(_) | Reply::BgBash(_) => vec![shell],
        Reply::Write { .. } => vec![write],
        Reply::Call { name, args } => vec![Part::Call {
            name: name.clone(),
            args: args.clone(),
        }],
        Reply::Status(_) | Reply::Hang => Vec::new(),
    }
}
