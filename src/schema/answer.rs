//! An agent's answer, from text to a value that fits its schema: the one step `ask` and the
//! verdict reader share, so every agent's answer is judged, and explained on a retry, alike.

use super::{Validator, Violations, extract_json};
use serde_json::Value;

/// Why an answer is refused. The `Display` is written for the agent — it goes into the
/// prompt of the retry, after the question — so, unlike the crate's other errors, it does not
/// read after "failed to …": a message for people wraps it (`ask` after N attempts: …).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// The text holds no JSON object at all.
    #[error("your answer holds no JSON object; answer with one JSON object that fits the schema")]
    NoObject,
    /// The object found does not fit the schema.
    #[error(
        "your JSON answer does not fit the schema:\n{violations}\nanswer again with one JSON object that fits it"
    )]
    Invalid {
        /// The object as found.
        value: Value,
        /// Every way it breaks the schema.
        violations: Violations,
    },
}

impl Validator {
    /// The JSON object in `text` (pure JSON, or found in prose by [`extract_json`]), checked
    /// against the schema.
    ///
    /// ```
    /// use oneshot::schema::{AnswerError, Registry};
    /// let v = Registry::builtin().resolve("branch-suggest").unwrap().validator().unwrap();
    /// let ok = v.answer("Sure:\n```json\n{\"branch\": \"fix/parser\", \"nickname\": \"parser fix\"}\n```");
    /// assert_eq!(ok.unwrap()["branch"], "fix/parser");
    /// assert_eq!(v.answer("fix/parser"), Err(AnswerError::NoObject));
    /// let bad = v.answer(r#"{"branch": "Fix Parser", "nickname": "x"}"#).unwrap_err();
    /// assert!(bad.to_string().contains("- /branch: \"Fix Parser\" does not match"));
    /// ```
    pub fn answer(&self, text: &str) -> Result<Value, AnswerError> {
        let value = Value::Object(extract_json(text).ok_or(AnswerError::NoObject)?.value);
        match self.validate(&value) {
            Ok(()) => Ok(value),
            Err(violations) => Err(AnswerError::Invalid { value, violations }),
        }
    }
}
