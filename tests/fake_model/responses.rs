//! The OpenAI Responses API (`POST /v1/responses`, SSE), the only wire API Codex 0.169 accepts:
//! response.created, then per output item `response.output_item.added`, text deltas
//! (`response.output_text.delta`) and `response.output_item.done`, then `response.completed`
//! with usage. Tool calls are `function_call` items whose `arguments` is a JSON string.

use super::{Event, Part, Reply, Request};
use serde_json::{Value, json};

/// Codex's shell tool has changed name and arguments across releases; use whichever one the
/// request offers (`exec_command {cmd}`, `shell_command {command}`, `shell {command: argv}`).
fn shell_call(req: &Request, cmd: &str) -> Part {
    let names = req.tool_names();
    let has = |n: &str| names.iter().any(|t| t == n);
    let (name, args) = if has("exec_command") {
        ("exec_command", json!({"cmd": cmd}))
    } else if has("shell_command") {
        ("shell_command", json!({"command": cmd}))
    } else {
        ("shell", json!({"command": ["bash", "-lc", cmd]}))
    };
    Part::Call {
        name: name.into(),
        args,
    }
}

pub(super) fn parts(req: &Request, reply: &Reply) -> Vec<Part> {
    match reply {
        Reply::Text(t) | Reply::Cut(t) => vec![Part::Text(t.clone())],
        Reply::Json(v) => vec![Part::Text(v.to_string())],
        Reply::Bash(cmd) | Reply::BgBash(cmd) => vec![shell_call(req, cmd)],
        // Codex's own edit tool is apply_patch, a freeform grammar; a shell write is what a model
        // without it does and exercises the same sandbox.
        Reply::Write { path, content } => {
            let cmd = format!("cat > '{path}' <<'FAKE_MODEL_EOF'\n{content}\nFAKE_MODEL_EOF");
            vec![shell_call(req, &cmd)]
        }
        Reply::Call { name, args } => vec![Part::Call {
            name: name.clone(),
            args: args.clone(),
        }],
        Reply::Status(_) | Reply::Hang => Vec::new(),
    }
}

fn item_done(part: &Part, id: u64, i: usize) -> Value {
    match part {
        Part::Text(t) => json!({"type": "message", "id": format!("msg_fake_{id}_{i}"),
            "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": t, "annotations": []}]}),
        Part::Call { name, args } => json!({"type": "function_call",
            "id": format!("fc_fake_{id}_{i}"), "call_id": format!("call_fake_{id}_{i}"),
            "name": name, "arguments": args.to_string(), "status": "completed"}),
    }
}

pub(super) fn stream(req: &Request, parts: &[Part], id: u64) -> Vec<Event> {
    let model = req.body.get("model").cloned().unwrap_or(json!("gpt-fake"));
    let resp_id = format!("resp_fake_{id}");
    let mut ev = vec![Event::named(
        "response.created",
        json!({"type": "response.created", "sequence_number": 0,
               "response": {"id": resp_id, "object": "response", "status": "in_progress",
                            "model": model, "output": []}}),
    )];
    for (i, part) in parts.iter().enumerate() {
        let done = item_done(part, id, i);
        let mut added = done.clone();
        added["status"] = json!("in_progress");
        if let Part::Text(t) = part {
            added["content"] = json!([]);
            ev.push(Event::named(
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": i, "item": added}),
            ));
            ev.push(
                Event::named(
                    "response.output_text.delta",
                    json!({"type": "response.output_text.delta", "item_id": done["id"],
                           "output_index": i, "content_index": 0, "delta": t}),
                )
                .delta(),
            );
        } else {
            ev.push(Event::named(
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": i, "item": added}),
            ));
        }
        ev.push(Event::named(
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": i, "item": done}),
        ));
    }
    ev.push(Event::named(
        "response.completed",
        json!({"type": "response.completed", "response": {
            "id": resp_id, "object": "response", "status": "completed", "model": model,
            "output": parts.iter().enumerate().map(|(i, p)| item_done(p, id, i)).collect::<Vec<_>>(),
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 120}}}),
    ));
    ev
}
