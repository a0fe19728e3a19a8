//! What every protocol's parser shares: decoding one line into the protocol's own type with a
//! kept fallback, and reading the few things agents write as loose text (tool results, JSON
//! answers, HTTP statuses in error words).

use super::AgentEvent;
use serde::Deserialize;

/// What a line decoded into: the protocol's own type, or the fallback event already made.
pub(crate) enum Decoded<T> {
    /// The line matched the protocol's line type.
    Line(T),
    /// Blank line: no event.
    Blank,
    /// The line was JSON of another shape ([`AgentEvent::Unknown`]) or not JSON at all
    /// ([`AgentEvent::Malformed`]).
    Fallback(AgentEvent),
}

/// Decodes one line into `T`, falling back to a kept [`AgentEvent::Unknown`] when the JSON is
/// well formed but does not fit `T` (a field changed type in a new CLI version), and to
/// [`AgentEvent::Malformed`] when it is not JSON.
pub(crate) fn decode<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Decoded<T> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return Decoded::Blank;
    }
    match serde_json::from_slice::<T>(line) {
        Ok(t) => Decoded::Line(t),
        Err(_) => Decoded::Fallback(unknown(line)),
    }
}

/// A tag (a method, a type) as the protocol's tag enum, whose `#[serde(other)]` variant takes
/// any tag it does not name; `None` when the tag is missing or not a string.
pub(crate) fn tag<'a, T: Deserialize<'a>>(v: &'a serde_json::Value) -> Option<T> {
    T::deserialize(v).ok()
}

/// A tag already read as text, as the protocol's tag enum (whose `#[serde(other)]` variant
/// takes any tag it does not name); `None` only for an enum without one.
pub(crate) fn tag_str<T: serde::de::DeserializeOwned>(s: &str) -> Option<T> {
    use serde::de::IntoDeserializer;
    let text: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
        s.into_deserializer();
    T::deserialize(text).ok()
}

/// [`AgentEvent::Unknown`] for a well-formed line, [`AgentEvent::Malformed`] otherwise.
pub(crate) fn unknown(line: &[u8]) -> AgentEvent {
    match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(raw) => AgentEvent::Unknown { raw },
        Err(e) => AgentEvent::malformed(line, e),
    }
}

/// A JSON value's text: strings as they are, text blocks (`[{"type":"text","text":…}]`)
/// joined, anything else as compact JSON. Tool results come in all three shapes.
pub(crate) fn value_text(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(items) => {
            let mut out = String::new();
            for item in items {
                match item.get("text").and_then(Value::as_str) {
                    Some(t) => out.push_str(t),
                    None => out.push_str(&item.to_string()),
                }
            }
            out
        }
        other => other.to_string(),
    }
}

/// The final answer as JSON, when it is a JSON object or array (agents asked for a schema in
/// the prompt, or Codex with `--output-schema`, answer that way). Not validated: the caller
/// checks it against its schema.
pub(crate) fn json_answer(text: &str) -> Option<serde_json::Value> {
    let t = text.trim();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    serde_json::from_str(t).ok()
}

/// An HTTP status named in an agent's error text ("unexpected status 401 Unauthorized").
pub(crate) fn status_in(text: &str) -> Option<u16> {
    let at = text.find("status")?;
    let rest = text[at + "status".len()..].trim_start_matches([' ', ':', '=']);
    let digits = rest.get(..3)?;
    let status: u16 = digits.parse().ok()?;
    let ends = rest[3..].chars().next().is_none_or(|c| !c.is_ascii_digit());
    ((100..=599).contains(&status) && ends).then_some(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_answers_and_statuses_are_found_in_text() {
        assert_eq!(json_answer(" {\"ok\": true}\n"), Some(json!({"ok": true})));
        assert_eq!(json_answer("ok: true"), None);
        assert_eq!(json_answer("{broken"), None);
        assert_eq!(
            status_in("unexpected status 401 Unauthorized: bad key"),
            Some(401)
        );
        assert_eq!(status_in("http status: 529"), Some(529));
        assert_eq!(status_in("status 4010"), None);
        assert_eq!(status_in("no status here"), None);
    }

    #[test]
    fn value_text_reads_every_result_shape() {
        assert_eq!(value_text(&json!("plain")), "plain");
        assert_eq!(
            value_text(&json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])),
            "ab"
        );
        assert_eq!(value_text(&json!({"k": 1})), r#"{"k":1}"#);
        assert_eq!(value_text(&json!(null)), "");
    }
}
