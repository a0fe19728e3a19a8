//! OpenAI Chat Completions (`POST /v1/chat/completions`), as litellm calls it for Aider:
//! `chat.completion.chunk` events, a final chunk with `finish_reason`, a usage chunk, `[DONE]`.
//! Also the OpenAI error body used by the Responses API. Cline's openai-compatible provider
//! speaks it too, with tools of its own.

use super::{Event, Part, Reply, Request};
use serde_json::{Value, json};

pub(super) fn parts(req: &Request, reply: &Reply) -> Vec<Part> {
    if req.tool_names().iter().any(|n| n == "run_commands") {
        return cline_parts(reply);
    }
    match reply {
        Reply::Text(t) | Reply::Cut(t) => vec![Part::Text(t.clone())],
        Reply::Json(v) => vec![Part::Text(v.to_string())],
        Reply::Bash(cmd) | Reply::BgBash(cmd) => vec![Part::Call {
            name: "bash".into(),
            args: json!({"command": cmd}),
        }],
        // Aider has no tools: its "whole" edit format is the file's path, then the whole new
        // content in a fence (run aider with `--edit-format whole`).
        Reply::Write { path, content } => {
            vec![Part::Text(format!("{path}\n```\n{content}\n```\n"))]
        }
        Reply::Call { name, args } => vec![Part::Call {
            name: name.clone(),
            args: args.clone(),
        }],
        Reply::Status(_) | Reply::Hang => Vec::new(),
    }
}

/// Cline offers `run_commands` (a list of shell commands) and, outside plan mode, `editor`
/// (creates a file from `new_text`, or replaces `old_text`).
fn cline_parts(reply: &Reply) -> Vec<Part> {
    let shell = match reply {
        Reply::Bash(cmd) | Reply::BgBash(cmd) => Part::Call {
            name: "run_commands".into(),
            args: json!({"commands": [cmd]}),
        },
        _ => Part::Text(String::new()),
    };
    let write = match reply {
        Reply::Write { path, content } => Part::Call {
            name: "editor".into(),
            args: json!({"path": path, "new_text": content}),
        },
        _ => Part::Text(String::new()),
    };
    super::default_parts(reply, shell, write)
}

fn model(req: &Request) -> Value {
    req.body.get("model").cloned().unwrap_or(json!("gpt-fake"))
}

fn chunk(req: &Request, id: u64, delta: Value, finish: Value) -> Value {
    json!({"id": format!("chatcmpl-fake-{id}"), "object": "chat.completion.chunk",
           "created": 1_700_000_000, "model": model(req),
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn finish(parts: &[Part]) -> &'static str {
    if parts.iter().any(|p| matches!(p, Part::Call { .. })) {
        "tool_calls"
    } else {
        "stop"
    }
}

fn usage() -> Value {
    json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120})
}

pub(super) fn stream(req: &Request, parts: &[Part], id: u64) -> Vec<Event> {
    let mut ev = vec![Event::data(chunk(
        req,
        id,
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    ))];
    let mut call_index = 0;
    for part in parts {
        match part {
            Part::Text(t) => {
                ev.push(Event::data(chunk(req, id, json!({"content": t}), Value::Null)).delta())
            }
            Part::Call { name, args } => {
                let call = json!({"index": call_index, "id": format!("call_fake_{id}_{call_index}"),
                    "type": "function", "function": {"name": name, "arguments": args.to_string()}});
                ev.push(Event::data(chunk(
                    req,
                    id,
                    json!({"tool_calls": [call]}),
                    Value::Null,
                )));
                call_index += 1;
            }
        }
    }
    ev.push(Event::data(chunk(req, id, json!({}), json!(finish(parts)))));
    let mut tail = chunk(req, id, json!({}), Value::Null);
    tail["choices"] = json!([]);
    tail["usage"] = usage();
    ev.push(Event::data(tail));
    // `[DONE]` is not JSON; a JSON string would be quoted, so it is sent as a raw marker.
    ev.push(Event {
        name: None,
        data: Value::Null,
        is_delta: false,
    });
    ev
}

pub(super) fn whole(req: &Request, parts: &[Part], id: u64) -> Value {
    let text: String = parts
        .iter()
        .filter_map(|p| {
            if let Part::Text(t) = p {
                Some(t.as_str())
            } else {
                None
            }
        })
        .collect();
    let calls: Vec<Value> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            Part::Call { name, args } => Some(json!({"id": format!("call_fake_{id}_{i}"),
                "type": "function", "function": {"name": name, "arguments": args.to_string()}})),
            Part::Text(_) => None,
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    json!({"id": format!("chatcmpl-fake-{id}"), "object": "chat.completion",
           "created": 1_700_000_000, "model": model(req),
           "choices": [{"index": 0, "message": message, "finish_reason": finish(parts)}],
           "usage": usage()})
}

pub(super) fn error(code: u16, message: &str) -> Value {
    let (kind, c) = match code {
        401 => ("invalid_request_error", "invalid_api_key"),
        429 => ("rate_limit_exceeded", "rate_limit_exceeded"),
        _ => ("server_error", "server_error"),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": c}})
}
