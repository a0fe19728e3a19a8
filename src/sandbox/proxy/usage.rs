//! Token usage read from a model response as it streams past: Anthropic's Messages API (SSE
//! `message_start` / `message_delta`, or one JSON message), OpenAI's Responses API (SSE
//! `response.completed`, or JSON) and Chat Completions (`usage` with prompt/completion tokens),
//! Gemini's `usageMetadata` (JSON, a JSON array of chunks, or SSE; the last one counts).

use serde_json::Value;

use super::{Provider, ProxyEvent};

/// A JSON body past this size is not kept for its usage (model answers are far smaller).
const JSON_CAP: usize = 32 << 20;
/// How much of an error's body its event carries.
const ERROR_CAP: usize = 2048;

/// Reads one response's body, chunk by chunk.
pub(crate) struct UsageReader {
    provider: Provider,
    sse: bool,
    status: u16,
    /// SSE: the unfinished line. JSON: the body so far.
    buf: Vec<u8>,
    /// SSE: the `data:` lines of the event being read.
    data: Vec<u8>,
    overflow: bool,
    usage: Counts,
    model: Option<String>,
}

#[derive(Default)]
struct Counts {
    seen: bool,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

impl UsageReader {
    /// A reader for a response of `provider`, server-sent events or not, with its status.
    pub(crate) fn new(provider: Provider, sse: bool, status: u16) -> UsageReader {
        UsageReader {
            provider,
            sse,
            status,
            buf: Vec::new(),
            data: Vec::new(),
            overflow: false,
            usage: Counts::default(),
            model: None,
        }
    }

    /// One chunk of the body, as it arrived.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        if !self.sse || self.is_error() {
            if self.buf.len() + chunk.len() > JSON_CAP {
                self.overflow = true;
                self.buf = Vec::new();
            }
            if !self.overflow {
                self.buf.extend_from_slice(chunk);
            }
            return;
        }
        let mut rest = chunk;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            self.buf.extend_from_slice(&rest[..nl]);
            let mut line = std::mem::take(&mut self.buf);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.line(&line);
            // The line's allocation serves the next one.
            line.clear();
            self.buf = line;
            rest = &rest[nl + 1..];
        }
        self.buf.extend_from_slice(rest);
    }

    /// The body ended (or was cut off): its usage, its error, or nothing.
    pub(crate) fn finish(mut self) -> Option<ProxyEvent> {
        if self.is_error() {
            let end = self.buf.len().min(ERROR_CAP);
            return Some(ProxyEvent::ModelError {
                provider: self.provider,
                status: self.status,
                message: String::from_utf8_lossy(&self.buf[..end]).trim().to_string(),
            });
        }
        if self.sse {
            let last = std::mem::take(&mut self.buf);
            self.line(&last);
            self.dispatch();
        } else if !self.overflow
            && let Ok(v) = serde_json::from_slice::<Value>(&self.buf)
        {
            match v {
                // Gemini's streamGenerateContent without `alt=sse`: an array of chunks.
                Value::Array(items) => items.iter().for_each(|i| self.apply(i)),
                v => self.apply(&v),
            }
        }
        let c = &self.usage;
        c.seen.then(|| ProxyEvent::Usage {
            provider: self.provider,
            model: self.model.clone(),
            input_tokens: c.input,
            output_tokens: c.output,
            cache_read_tokens: c.cache_read,
            cache_write_tokens: c.cache_write,
        })
    }

    fn is_error(&self) -> bool {
        self.status >= 400
    }

    /// One SSE line: `data:` lines gather, a blank line ends the event.
    fn line(&mut self, line: &[u8]) {
        if line.is_empty() {
            self.dispatch();
        } else if let Some(d) = line.strip_prefix(b"data:") {
            if !self.data.is_empty() {
                self.data.push(b'\n');
            }
            self.data
                .extend_from_slice(d.strip_prefix(b" ").unwrap_or(d));
        }
    }

    fn dispatch(&mut self) {
        let data = std::mem::take(&mut self.data);
        // Most events are text deltas: only those that mention usage are parsed.
        if memchr::memmem::find(&data, b"sage").is_none() {
            return;
        }
        if let Ok(v) = serde_json::from_slice::<Value>(&data) {
            self.apply(&v);
        }
    }

    /// Takes the usage out of one JSON message or event, later values replacing earlier ones
    /// (every API reports running totals).
    fn apply(&mut self, v: &Value) {
        match self.provider {
            Provider::Anthropic => {
                let (usage, model) = match v.get("type").and_then(Value::as_str) {
                    Some("message_start") => {
                        let m = &v["message"];
                        (&m["usage"], &m["model"])
                    }
                    _ => (&v["usage"], &v["model"]),
                };
                self.model_from(model);
                if usage.is_object() {
                    let c = &mut self.usage;
                    c.seen = true;
                    set(&mut c.input, &usage["input_tokens"]);
                    set(&mut c.output, &usage["output_tokens"]);
                    set(&mut c.cache_read, &usage["cache_read_input_tokens"]);
                    set(&mut c.cache_write, &usage["cache_creation_input_tokens"]);
                }
            }
            Provider::OpenAi => {
                // Responses API events carry the response; its JSON answer and Chat
                // Completions have `usage` at the top.
                let r = if v["response"].is_object() {
                    &v["response"]
                } else {
                    v
                };
                self.model_from(&r["model"]);
                let usage = &r["usage"];
                if usage.is_object() {
                    let c = &mut self.usage;
                    c.seen = true;
                    if usage.get("prompt_tokens").is_some() {
                        set(&mut c.input, &usage["prompt_tokens"]);
                        set(&mut c.output, &usage["completion_tokens"]);
                        set(
                            &mut c.cache_read,
                            &usage["prompt_tokens_details"]["cached_tokens"],
                        );
                    } else {
                        set(&mut c.input, &usage["input_tokens"]);
                        set(&mut c.output, &usage["output_tokens"]);
                        set(
                            &mut c.cache_read,
                            &usage["input_tokens_details"]["cached_tokens"],
                        );
                    }
                }
            }
            Provider::Gemini => {
                self.model_from(&v["modelVersion"]);
                let usage = &v["usageMetadata"];
                if usage.is_object() {
                    let n = |k: &str| usage[k].as_u64().unwrap_or(0);
                    self.usage = Counts {
                        seen: true,
                        input: n("promptTokenCount"),
                        // Thinking is billed as output.
                        output: n("candidatesTokenCount") + n("thoughtsTokenCount"),
                        cache_read: n("cachedContentTokenCount"),
                        cache_write: 0,
                    };
                }
            }
        }
    }

    fn model_from(&mut self, v: &Value) {
        if let Some(m) = v.as_str().filter(|m| !m.is_empty()) {
            self.model = Some(m.to_string());
        }
    }
}

fn set(slot: &mut u64, v: &Value) {
    if let Some(n) = v.as_u64() {
        *slot = n;
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
