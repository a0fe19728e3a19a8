//! The Anthropic Messages API (`POST /v1/messages?beta=true`), as Claude Code streams it:
//! message_start, content_block_start/delta/stop per block (tool input as `input_json_delta`
//! pieces), message_delta with the stop reason, message_stop.

use super::{Event, Part, Reply, Request, default_parts};
use serde_json::{Value, json};

pub(super) fn parts(req: &Request, reply: &Reply) -> Vec<Part> {
    if let Reply::Json(v) = reply {
        // With `--json-schema` Claude Code offers a StructuredOutput tool and expects the answer
        // through it; without it, the JSON is the answer's text.
        if req.tool_names().iter().any(|n| n == "StructuredOutput") {
            return vec![Part::Call {
                name: "StructuredOutput".into(),
                args: v.clone(),
            }];
        }
    }
    let shell = match reply {
        Reply::Bash(cmd) => Part::Call {
            name: "Bash".into(),
            args: json!({"command": cmd, "description": "scripted command"}),
        },
        Reply::BgBash(cmd) => Part::Call {
            name: "Bash".into(),
            args: json!({"command": cmd, "description": "scripted background command",
                         "run_in_background": true}),
        },
        _ => Part::Text(String::new()),
    };
    let write = match reply {
        Reply::Write { path, content } => Part::Call {
            name: "Write".into(),
            args: json!({"file_path": path, "content": content}),
        },
        _ => Part::Text(String::new()),
    };
    default_parts(reply, shell, write)
}

fn model(req: &Request) -> Value {
    req.body
        .get("model")
        .cloned()
        .unwrap_or(json!("claude-fake"))
}

fn stop_reason(parts: &[Part]) -> &'static str {
    if parts.iter().any(|p| matches!(p, Part::Call { .. })) {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn usage() -> Value {
    json!({"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0,
           "cache_read_input_tokens": 0})
}

pub(super) fn stream(req: &Request, parts: &[Part], id: u64) -> Vec<Event> {
    let mut ev = vec![Event::named(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_fake_{id}"), "type": "message", "role": "assistant",
            "model": model(req), "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}}),
    )];
    for (index, part) in parts.iter().enumerate() {
        match part {
            Part::Text(text) => {
                ev.push(Event::named(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}}),
                ));
                ev.push(
                    Event::named(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": text}}),
                    )
                    .delta(),
                );
            }
            Part::Call { name, args } => {
                ev.push(Event::named(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": {
                        "type": "tool_use", "id": format!("toolu_fake_{id}_{index}"),
                        "name": name, "input": {}}}),
                ));
                // Two pieces, so the client really assembles partial JSON.
                let args = args.to_string();
                let mid = args
                    .char_indices()
                    .nth(args.chars().count() / 2)
                    .map_or(0, |c| c.0);
                for piece in [&args[..mid], &args[mid..]] {
                    ev.push(Event::named(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    ));
                }
            }
        }
        ev.push(Event::named(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    ev.push(Event::named(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason(parts), "stop_sequence": null},
               "usage": {"output_tokens": 20}}),
    ));
    ev.push(Event::named(
        "message_stop",
        json!({"type": "message_stop"}),
    ));
    ev
}

pub(super) fn whole(req: &Request, parts: &[Part], id: u64) -> Value {
    let content: Vec<Value> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            Part::Text(t) => json!({"type": "text", "text": t}),
            Part::Call { name, args } => json!({"type": "tool_use",
                "id": format!("toolu_fake_{id}_{i}"), "name": name, "input": args}),
        })
        .collect();
    json!({"id": format!("msg_fake_{id}"), "type": "message", "role": "assistant",
           "model": model(req), "content": content, "stop_reason": stop_reason(parts),
           "stop_sequence": null, "usage": usage()})
}

pub(super) fn error(code: u16, message: &str) -> Value {
    let kind = match code {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
