//! Finding the JSON object in an agent's prose.

use crate::schema::{Found, extract_json};
use proptest::prelude::*;

fn found(text: &str) -> Option<(String, Found)> {
    extract_json(text).map(|e| {
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text[e.span.clone()]).unwrap(),
            serde_json::Value::Object(e.value.clone()),
            "the span holds the value"
        );
        (serde_json::Value::Object(e.value).to_string(), e.how)
    })
}

#[test]
fn the_whole_text() {
    assert_eq!(
        found("  {\"a\": 1}\n"),
        Some((r#"{"a":1}"#.into(), Found::Whole))
    );
}

#[test]
fn fenced_blocks_the_last_wins() {
    let text = "First try:\n```json\n{\"a\": 1}\n```\nBetter:\n```JSON\n{\"a\": 2}\n```\nDone.";
    assert_eq!(found(text), Some((r#"{"a":2}"#.into(), Found::Fence)));
    // An unmarked fence counts; another language does not (its braces still may).
    let text = "```\n{\"b\": true}\n```\n```python\nx = {\"c\": 1}\n```";
    assert_eq!(found(text), Some((r#"{"b":true}"#.into(), Found::Fence)));
    // Four backticks close only with four; an indented fence counts.
    let text = "  ````json\n  {\"d\": \"```\"}\n  ````\n";
    assert_eq!(found(text), Some((r#"{"d":"```"}"#.into(), Found::Fence)));
    // A fence whose content is not an object falls through to the braces.
    let text = "```json\n[1, 2]\n```\nso {\"e\": 5}";
    assert_eq!(found(text), Some((r#"{"e":5}"#.into(), Found::Braces)));
}

#[test]
fn the_last_balanced_object_in_prose() {
    let text = "I looked at {the code}. Answer: {\"verdict\": \"retry\", \"reason\": \"a } in \
                a string\"} — and that {is all}.";
    assert_eq!(
        found(text),
        Some((
            r#"{"reason":"a } in a string","verdict":"retry"}"#.into(),
            Found::Braces
        ))
    );
    // Two objects: the last.
    assert_eq!(
        found(r#"{"a": 1} then {"a": 2}"#).map(|f| f.0),
        Some(r#"{"a":2}"#.into())
    );
    // A nested object is found whole, not its inner part.
    assert_eq!(
        found(r#"answer: {"a": {"b": [1, {"c": 2}]}} ok"#).map(|f| f.0),
        Some(r#"{"a":{"b":[1,{"c":2}]}}"#.into())
    );
    // Inside braces that are not JSON, the object they hold.
    assert_eq!(
        found(r#"{note: {"a": 1}}"#).map(|f| f.0),
        Some(r#"{"a":1}"#.into())
    );
    // An unclosed brace before the answer does not hide it.
    assert_eq!(
        found(r#"fn main() { let x = 1; ... here: {"ok": true}"#).map(|f| f.0),
        Some(r#"{"ok":true}"#.into())
    );
    // Escaped quotes inside strings.
    assert_eq!(
        found(r#"x {"q": "say \"}\" now"} y"#).map(|f| f.0),
        Some(r#"{"q":"say \"}\" now"}"#.into())
    );
}

#[test]
fn no_object_no_answer() {
    for text in [
        "",
        "   ",
        "VERDICT: DONE",
        "{not json}",
        "[1, 2, 3]",
        "{\"unterminated\": ",
        "}}}{{{",
        "\"{\\\"a\\\": 1}\"",
    ] {
        assert_eq!(found(text), None, "{text:?}");
    }
}

#[test]
fn many_braces_that_are_not_json_cost_a_bounded_number_of_parses() {
    let text = "{\"a\" x} ".repeat(100_000);
    let start = std::time::Instant::now();
    assert_eq!(found(&text), None);
    // Linear: 800 KB in well under a second even unoptimized (a parse per span would not be).
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

proptest! {
    #[test]
    fn never_panics_and_any_find_is_an_object_at_its_span(text in ".{0,300}") {
        if let Some(e) = extract_json(&text) {
            let parsed: serde_json::Value = serde_json::from_str(&text[e.span.clone()]).unwrap();
            prop_assert_eq!(parsed, serde_json::Value::Object(e.value));
        }
    }

    #[test]
    fn an_object_in_prose_is_found(
        before in "[^{}\"`]{0,80}",
        after in "[^{}\"`]{0,80}",
        key in "[a-z]{1,8}",
        value in any::<i64>(),
    ) {
        let object = serde_json::json!({ key.clone(): value });
        let text = format!("{before}{object}{after}");
        let e = extract_json(&text).unwrap();
        prop_assert_eq!(serde_json::Value::Object(e.value), object);
    }

    #[test]
    fn json_like_noise_never_panics(text in r#"[{}\[\]":,\\a1 \n`]{0,200}"#) {
        let _ = extract_json(&text);
    }
}
