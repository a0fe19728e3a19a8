//! Validating an answer against a schema: compiled once, then cheap per answer. The errors
//! are written to go back into an agent's prompt on a retry, so each is one short line with
//! the place in the answer it is about.

use serde_json::Value;
use std::fmt;

/// At most this many violations are listed; the rest are counted (an answer of the wrong
/// shape altogether would otherwise bury the first, most useful ones).
const MAX_LISTED: usize = 20;

/// A value of at most this many bytes (as JSON) is quoted in a message; a longer one is named
/// "value", so a 4 KB reason of the wrong type does not fill the prompt with itself.
const MAX_QUOTED: usize = 80;

/// A schema compiled for validation. Cheap to share between threads.
#[derive(Debug)]
pub struct Validator {
    inner: jsonschema::Validator,
}

/// One way an answer breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Violation {
    /// The JSON pointer of the offending value in the answer; `""` is the whole answer.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for Violation {
    /// `/confidence: 1.5 is greater than the maximum of 1`, the whole answer shown as `/`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}",
            super::pointer_display(&self.path),
            self.message
        )
    }
}

/// Every way an answer breaks its schema (never empty).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Violations(pub Vec<Violation>);

impl fmt::Display for Violations {
    /// One line per violation (`- /path: message`), at most 20, then how many more there
    /// are: the text a retry prompt quotes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.0.iter().take(MAX_LISTED).enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "- {v}")?;
        }
        if self.0.len() > MAX_LISTED {
            write!(f, "\n- … and {} more", self.0.len() - MAX_LISTED)?;
        }
        Ok(())
    }
}

impl std::error::Error for Violations {}

impl Validator {
    /// Compiles `schema` (checked against its meta-schema first). `name` (a label or file)
    /// is what an error names. No `$ref` is fetched from the network or the disk.
    pub fn new(name: &str, schema: &Value) -> Result<Self, super::SchemaError> {
        jsonschema::validator_for(schema)
            .map(|inner| Validator { inner })
            .map_err(|e| super::SchemaError::Compile {
                name: name.to_string(),
                message: format!(
                    "{}: {}",
                    super::pointer_display(e.instance_path().as_str()),
                    short_message(&e)
                ),
            })
    }

    /// Whether `answer` fits the schema, without collecting why not.
    pub fn is_valid(&self, answer: &Value) -> bool {
        self.inner.is_valid(answer)
    }

    /// Checks `answer`; on failure, every violation with its place in the answer.
    ///
    /// ```
    /// use oneshot::schema::Registry;
    /// let verdict = Registry::builtin().resolve("verdict").unwrap().validator().unwrap();
    /// let answer = serde_json::json!({
    ///     "verdict": "maybe", "reason": "", "confidence": 2, "open_criteria": []
    /// });
    /// let errors = verdict.validate(&answer).unwrap_err();
    /// assert_eq!(
    ///     errors.to_string(),
    ///     "- /confidence: 2 is greater than the maximum of 1\n\
    ///      - /verdict: \"maybe\" is not one of \"done\", \"retry\" or \"impossible\""
    /// );
    /// ```
    pub fn validate(&self, answer: &Value) -> Result<(), Violations> {
        // The common case, a valid answer, builds no error values at all.
        if self.inner.is_valid(answer) {
            return Ok(());
        }
        let mut all: Vec<Violation> = self
            .inner
            .iter_errors(answer)
            .map(|e| Violation {
                path: e.instance_path().as_str().to_string(),
                message: short_message(&e),
            })
            .collect();
        all.sort_by(|a, b| a.path.cmp(&b.path));
        all.dedup();
        if all.is_empty() {
            // is_valid and iter_errors disagreeing would be the crate's bug; never report
            // "invalid" with nothing to fix.
            all.push(Violation {
                path: String::new(),
                message: "does not match the schema".into(),
            });
        }
        Err(Violations(all))
    }
}

/// The validator's message for `e`, with the offending value quoted only when it is short.
pub(crate) fn short_message(e: &jsonschema::ValidationError<'_>) -> String {
    let quoted = serde_json::to_string(e.instance().as_ref()).map_or(usize::MAX, |s| s.len());
    if quoted <= MAX_QUOTED {
        e.to_string()
    } else {
        e.masked().to_string()
    }
}
