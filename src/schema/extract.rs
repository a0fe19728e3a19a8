//! Finding the JSON object in an agent's free text (Gemini's and Aider's answers, which are
//! prose): the whole text if it is one, else the last fenced ```json block holding one, else
//! the last balanced `{…}` that parses. A pure function over the text; it never panics and
//! takes linear time (a bounded number of parse attempts).

use serde_json::{Map, Value};
use std::ops::Range;

/// At most this many brace-balanced candidates are parsed, newest first: prose full of
/// braces that are not JSON must not cost a parse each.
const MAX_ATTEMPTS: usize = 64;

/// A JSON object found in text.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    /// The object.
    pub value: Map<String, Value>,
    /// Where its JSON text is, as a byte range of the input.
    pub span: Range<usize>,
    /// How it was found.
    pub how: Found,
}

/// How [`extract_json`] found the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Found {
    /// The whole text (trimmed) is the object.
    Whole,
    /// A fenced code block marked `json` (or unmarked) holds it.
    Fence,
    /// A brace-balanced stretch of the text is it.
    Braces,
}

/// The JSON object an answer gives, or `None` when it gives none. The last one wins: agents
/// think out loud first and answer at the end.
///
/// ```
/// use oneshot::schema::{extract_json, Found};
/// let text = "I checked it.\n```json\n{\"verdict\": \"done\"}\n```\nBye {not json}";
/// let found = extract_json(text).unwrap();
/// assert_eq!(found.value["verdict"], "done");
/// assert_eq!(found.how, Found::Fence);
/// assert_eq!(extract_json("VERDICT: DONE"), None);
/// ```
pub fn extract_json(text: &str) -> Option<Extracted> {
    whole(text)
        .or_else(|| fenced(text))
        .or_else(|| braces(text))
}

/// The object `text[span]` holds, if it is exactly one.
fn object_at(text: &str, span: Range<usize>, how: Found) -> Option<Extracted> {
    match serde_json::from_str::<Value>(text.get(span.clone())?) {
        Ok(Value::Object(value)) => Some(Extracted { value, span, how }),
        _ => None,
    }
}

fn whole(text: &str) -> Option<Extracted> {
    let start = text.len() - text.trim_start().len();
    let end = text.trim_end().len();
    if start >= end || !text[start..].starts_with('{') {
        return None;
    }
    object_at(text, start..end, Found::Whole)
}

/// The last fenced block (```json or ``` alone, up to three spaces of indent, closed by a
/// line of at least as many backticks) whose content is an object.
fn fenced(text: &str) -> Option<Extracted> {
    let mut found = None;
    let mut open: Option<(usize, usize, bool)> = None; // (fence length, content start, json?)
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start_matches(' ').len();
        if indent > 3 {
            continue;
        }
        let body = &body[indent..];
        let ticks = body.len() - body.trim_start_matches('`').len();
        if ticks < 3 {
            continue;
        }
        let info = body[ticks..].trim();
        match open {
            Some((len, content, json)) if ticks >= len && info.is_empty() => {
                open = None;
                if json && let Some(e) = trimmed_object(text, content..start) {
                    found = Some(e);
                }
            }
            Some(_) => {}
            None if !info.contains('`') => {
                let lang = info.split_whitespace().next().unwrap_or("");
                let json = lang.is_empty() || lang.eq_ignore_ascii_case("json");
                open = Some((ticks, at, json));
            }
            None => {}
        }
    }
    found
}

fn trimmed_object(text: &str, span: Range<usize>) -> Option<Extracted> {
    let inner = text.get(span.clone())?;
    let start = span.start + (inner.len() - inner.trim_start().len());
    let end = span.start + inner.trim_end().len();
    (start < end).then(|| object_at(text, start..end, Found::Fence))?
}

/// The last brace-balanced stretch that parses as an object. One pass finds every balanced
/// `{…}` (braces inside strings do not count, strings being tracked only between braces, so
/// a stray quote in prose cannot hide what follows); the outermost ones are tried from the
/// end, then, for one that is not JSON itself (`{note: {"a": 1}}`), those inside it.
fn braces(text: &str) -> Option<Extracted> {
    let bytes = text.as_bytes();
    let mut open: Vec<usize> = Vec::new();
    let mut spans: Vec<Range<usize>> = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' if !open.is_empty() => in_string = true,
            b'{' => open.push(i),
            b'}' => {
                if let Some(start) = open.pop() {
                    spans.push(start..i + 1);
                }
            }
            _ => {}
        }
    }
    // Spans close in order of their ends, so an enclosing span comes after all it holds:
    // walking from the end meets each outer span before its inner ones.
    let mut attempts = 0;
    for span in spans.iter().rev() {
        if !looks_like_object(&bytes[span.clone()]) {
            continue;
        }
        attempts += 1;
        if attempts > MAX_ATTEMPTS {
            return None;
        }
        if let Some(found) = object_at(text, span.clone(), Found::Braces) {
            return Some(found);
        }
    }
    None
}

/// Whether a `{…}` could be a JSON object at all: `{` then whitespace then `"` or `}`.
fn looks_like_object(span: &[u8]) -> bool {
    span.iter()
        .skip(1)
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'"' || b == b'}')
}
