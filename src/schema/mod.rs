//! Schemas for structured answers (seed 002): the registry of labelled JSON Schemas an agent's
//! answer must fit, their self-check, validation, and finding the JSON in an answer written
//! as prose.
//!
//! # How it works
//!
//! A schema is asked for as `LABEL|FILE`. Labels name the built-ins (`verdict`,
//! `branch-suggest`, `nudgenik`, `conflict-resolve`, compiled in from `src/schema/builtin/`)
//! or a `NAME.json` in the user's registry directory ([`Registry::locate`]: `--registry`,
//! `$ONESHOT_SCHEMAS`, else `.oneshot/schemas/` in the project); anything with a `/` or
//! ending in `.json` is a file. A user file never replaces a built-in (see [`Registry`]).
//!
//! [`check`] is the self-check every schema should pass before an agent sees it: errors break
//! it for every agent, warnings only for OpenAI's strict mode; each names the JSON pointer of
//! the place. A [`Validator`] is compiled once and checks each answer, returning every
//! [`Violation`] with its place in the answer, in lines short enough to put back into the
//! agent's prompt. [`extract_json`] finds the object in an answer that is not pure JSON;
//! [`Validator::answer`] does both, from an agent's text to a value that fits.
//!
//! ```
//! use oneshot::schema::{Registry, extract_json};
//! let schema = Registry::builtin().resolve("verdict").unwrap();
//! assert!(oneshot::schema::check(&schema.value).is_empty());
//! let validator = schema.validator().unwrap();
//! let answer = extract_json(
//!     "Looks right.\n{\"verdict\": \"done\", \"reason\": \"tests pass\", \
//!      \"confidence\": 0.9, \"open_criteria\": []}",
//! )
//! .unwrap();
//! assert!(validator.validate(&answer.value.into()).is_ok());
//! ```

mod answer;
mod builtin;
mod check;
mod error;
mod extract;
mod pretty;
mod registry;
mod report;
mod validate;

#[cfg(test)]
mod tests;

pub use answer::AnswerError;
pub use builtin::Builtin;
pub use check::{Problem, Severity, check};
pub use error::SchemaError;
pub use extract::{Extracted, Found, extract_json};
pub use pretty::pretty;
pub use registry::{ENV, Origin, Refused, Registry, UserFile};
pub use report::Checked;
pub use validate::{Validator, Violation, Violations};

pub(crate) use builtin::{VERDICT, builtin};
pub(crate) use registry::is_path;

// What only the crate's tests reach through this module.
#[cfg(test)]
pub(crate) use {builtin::BUILTINS, registry::PROJECT_DIR};

use serde_json::Value;
use std::path::Path;

/// A schema, resolved and parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// The label, or the file as it was named.
    pub name: String,
    /// Where it comes from.
    pub origin: Origin,
    /// The schema.
    pub value: Value,
    /// Its JSON text, as written (what `oneshot schema show` prints, re-indented).
    pub text: String,
}

impl Schema {
    /// A built-in schema.
    pub fn from_builtin(b: &Builtin) -> Schema {
        Schema {
            name: b.label.to_string(),
            origin: Origin::Builtin,
            // The built-ins are JSON: a unit test parses every one.
            value: serde_json::from_str(b.text).expect("a built-in schema is JSON"),
            text: b.text.to_string(),
        }
    }

    /// The schema in `path`, called `name`.
    pub fn from_file(path: &Path, name: &str, origin: Origin) -> Result<Schema, SchemaError> {
        let text = std::fs::read_to_string(path).map_err(|source| SchemaError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let value = serde_json::from_str(&text).map_err(|e| SchemaError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(Schema {
            name: name.to_string(),
            origin,
            value,
            text,
        })
    }

    /// One line on what it is for: a built-in's own, else the schema's `description` or
    /// `title` (first line), else nothing.
    pub fn description(&self) -> String {
        if self.origin == Origin::Builtin
            && let Some(b) = builtin(&self.name)
        {
            return b.description.to_string();
        }
        ["description", "title"]
            .iter()
            .find_map(|k| self.value.get(*k).and_then(Value::as_str))
            .and_then(|d| d.lines().next())
            .unwrap_or("")
            .trim()
            .to_string()
    }

    /// The self-check ([`check`]).
    pub fn check(&self) -> Vec<Problem> {
        check(&self.value)
    }

    /// Compiles the schema for validating answers.
    pub fn validator(&self) -> Result<Validator, SchemaError> {
        Validator::new(&self.name, &self.value)
    }
}

/// A JSON pointer for people: the root (`""`) shown as `/`.
pub(crate) fn pointer_display(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}
