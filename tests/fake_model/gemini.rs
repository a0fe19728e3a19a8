//! The Gemini API (`…:streamGenerateContent?alt=sse`): each event is a GenerateContentResponse
//! chunk; the last carries `finishReason` and `usageMetadata`. Tool calls are `functionCall`
//! parts.

use super::{Event, Part, Reply, Request, default_parts};
use serde_json::{Value, json};

pub(super) fn parts(_req: &Request, reply: &Reply) -> Vec<Part> {
    let shell = match reply {
        Reply::Bash(cmd) | Reply::BgBash(cmd) => Part::Call {
            name: "run_shell_command".into(),
            args: json!({"command": cmd, "description": "scripted command"}),
        },
        _ => Part::Text(String::new()),
    };
    let write = match reply {
        Reply::Write { path, content } => Part::Call {
            name: "write_file".into(),
            args: json!({"file_path": path, "content": content}),
        },
        _ => Part::Text(String::new()),
    };
    default_parts(reply, shell, write)
}

fn part_json(p: &Part) -> Value {
    match p {
        Part::Text(t) => json!({"text": t}),
        Part::Call { name, args } => json!({"functionCall": {"name": name, "args": args}}),
    }
}

fn usage() -> Value {
    json!({"promptTokenCount": 200, "candidatesTokenCount": 40, "totalTokenCount": 240})
}

fn chunk(parts: Vec<Value>, last: bool, id: u64) -> Value {
    let mut cand = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut v = json!({"candidates": [], "modelVersion": "gemini-fake",
                       "responseId": format!("fake-{id}")});
    if last {
        cand["finishReason"] = json!("STOP");
        v["usageMetadata"] = usage();
    }
    v["candidates"] = json!([cand]);
    v
}

pub(super) fn stream(_req: &Request, parts: &[Part], id: u64) -> Vec<Event> {
    let mut ev: Vec<Event> = parts
        .iter()
        .map(|p| {
            let e = Event::data(chunk(vec![part_json(p)], false, id));
            if matches!(p, Part::Text(_)) {
                e.delta()
            } else {
                e
            }
        })
        .collect();
    // The closing chunk: finish reason and usage, with an empty text part as Gemini sends.
    ev.push(Event::data(chunk(vec![json!({"text": ""})], true, id)));
    ev
}

pub(super) fn whole(_req: &Request, parts: &[Part], id: u64) -> Value {
    chunk(parts.iter().map(part_json).collect(), true, id)
}

pub(super) fn error(code: u16, message: &str) -> Value {
    let status = match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        429 => "RESOURCE_EXHAUSTED",
        503 | 529 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": code, "message": message, "status": status}})
}
