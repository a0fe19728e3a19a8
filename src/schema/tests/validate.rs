//! Validation: every violation with its place in the answer, in short lines.

use crate::schema::{Registry, SchemaError, Validator, Violation};
use serde_json::json;

fn verdict() -> Validator {
    Registry::builtin()
        .resolve("verdict")
        .unwrap()
        .validator()
        .unwrap()
}

#[test]
fn a_valid_answer_passes() {
    let answer = json!({
        "verdict": "retry", "reason": "the test fails", "confidence": 0.4,
        "open_criteria": ["make test_parse pass"]
    });
    assert!(verdict().is_valid(&answer));
    assert_eq!(verdict().validate(&answer), Ok(()));
}

#[test]
fn every_violation_is_reported_with_its_path() {
    let answer = json!({
        "verdict": "DONE", "confidence": "high", "open_criteria": ["a", 2], "extra": true
    });
    let errors = verdict().validate(&answer).unwrap_err();
    let paths: Vec<&str> = errors.0.iter().map(|v| v.path.as_str()).collect();
    assert_eq!(
        paths,
        ["", "", "/confidence", "/open_criteria/1", "/verdict"]
    );
    assert_eq!(
        errors.to_string(),
        "- /: \"reason\" is a required property\n\
         - /: Additional properties are not allowed ('extra' was unexpected)\n\
         - /confidence: \"high\" is not of type \"number\"\n\
         - /open_criteria/1: 2 is not of type \"string\"\n\
         - /verdict: \"DONE\" is not one of \"done\", \"retry\" or \"impossible\""
    );
}

#[test]
fn a_long_value_is_not_quoted() {
    let long = "x".repeat(4000);
    let answer = json!({
        "verdict": "done", "reason": 1, "confidence": long, "open_criteria": []
    });
    let errors = verdict().validate(&answer).unwrap_err();
    assert_eq!(
        errors.0,
        [
            Violation {
                path: "/confidence".into(),
                message: "value is not of type \"number\"".into()
            },
            Violation {
                path: "/reason".into(),
                message: "1 is not of type \"string\"".into()
            },
        ]
    );
}

#[test]
fn at_most_twenty_violations_are_listed() {
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "array", "items": {"type": "string"}}},
        "required": ["n"],
        "additionalProperties": false
    });
    let v = Validator::new("numbers", &schema).unwrap();
    let errors = v
        .validate(&json!({"n": (0..25).collect::<Vec<_>>()}))
        .unwrap_err();
    assert_eq!(errors.0.len(), 25);
    let text = errors.to_string();
    assert_eq!(text.lines().count(), 21);
    assert!(text.ends_with("\n- … and 5 more"), "{text}");
}

#[test]
fn a_schema_the_validator_refuses_names_itself_and_the_place() {
    let bad = json!({"type": "object", "properties": {"n": {"type": "integr"}}});
    let e = Validator::new("mine", &bad).unwrap_err();
    assert!(matches!(e, SchemaError::Compile { .. }));
    let text = e.to_string();
    assert!(
        text.starts_with("compile schema mine: /properties/n/type: "),
        "{text}"
    );
    assert!(
        text.ends_with("; run `oneshot schema check mine`"),
        "{text}"
    );
}

#[test]
fn a_validator_is_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Validator>();
}

#[test]
fn an_answer_in_prose_is_found_then_checked_and_refusals_speak_to_the_agent() {
    use crate::schema::AnswerError;
    let v = verdict();
    let prose = "I ran the tests.\n```json\n{\"verdict\": \"done\", \"reason\": \"green\", \
                 \"confidence\": 0.9, \"open_criteria\": []}\n```";
    assert_eq!(v.answer(prose).unwrap()["verdict"], "done");
    let e = v.answer("VERDICT: DONE").unwrap_err();
    assert_eq!(e, AnswerError::NoObject);
    assert_eq!(
        e.to_string(),
        "your answer holds no JSON object; answer with one JSON object that fits the schema"
    );
    let e = v
        .answer(
            r#"Here: {"verdict": "done", "reason": "ok", "confidence": 7, "open_criteria": []}"#,
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "your JSON answer does not fit the schema:\n\
         - /confidence: 7 is greater than the maximum of 1\n\
         answer again with one JSON object that fits it"
    );
    let AnswerError::Invalid { value, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!(value["confidence"], 7);
}
