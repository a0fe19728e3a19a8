//! What the server records of each request: which API it spoke, and its method, path, headers
//! and JSON body with credentials redacted, so a test can assert on what a CLI sent without its
//! assertions (or their failure messages) ever holding a key.

use super::http::RawRequest;
use serde_json::Value;

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
    /// The credential headers as received (lowercased names), for tests of who added the key:
    /// kept in memory only, and never in `{:?}` (a failing test prints its requests).
    pub credentials: Credentials,
    /// The JSON body, or `Value::Null` when there is none or it is not JSON.
    pub body: Value,
    pub api: Api,
    /// True when this request took a reply from the script.
    pub model_turn: bool,
    /// What the directed mode answered, in words (`None` for scripted replies and non-model
    /// requests).
    pub decision: Option<String>,
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
pub(super) fn tool_names(body: &Value) -> Vec<String> {
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

pub(super) fn classify(method: &str, path: &str) -> Api {
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

/// The record of `raw`; `model_turn` says whether it takes a scripted reply.
pub(super) fn record(raw: &RawRequest) -> Request {
    let api = classify(&raw.method, &raw.target);
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
    let credentials = raw
        .headers
        .iter()
        .filter(|(n, _)| SECRET_HEADERS.contains(&n.as_str()))
        .cloned()
        .collect();
    Request {
        credentials: Credentials(credentials),
        method: raw.method.clone(),
        path: redact_query(&raw.target),
        headers,
        body: serde_json::from_slice(&raw.body).unwrap_or(Value::Null),
        api,
        // Token counting shares the Messages path prefix but is no model turn.
        model_turn: api != Api::Other && !raw.target.contains("count_tokens"),
        decision: None,
    }
}

/// Credential headers as received; `Debug` says only their names.
#[derive(Clone, Default)]
pub struct Credentials(pub Vec<(String, String)>);

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(n, _)| format!("{n}: <redacted>")))
            .finish()
    }
}
