//! Checking schemas by name, as `oneshot schema check` does: one [`Checked`] per schema,
//! whatever is wrong with it (a file that is not JSON is a finding, not an error that stops
//! the others).

use super::{Origin, Problem, Registry, Schema, SchemaError, Severity, check};
use serde_json::Value;

/// One schema's self-check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The label, or the file as it was named.
    pub name: String,
    /// Where it comes from.
    pub origin: Origin,
    /// Its problems, errors first; empty when it is fine.
    pub problems: Vec<Problem>,
}

impl Checked {
    /// What a report names it by: a built-in's label, else its file, so an editor can jump
    /// there.
    pub fn display_name(&self) -> String {
        match &self.origin {
            Origin::Builtin => self.name.clone(),
            Origin::User(p) | Origin::File(p) => p.display().to_string(),
        }
    }

    /// How many problems of this severity it has.
    pub fn count(&self, severity: Severity) -> usize {
        self.problems
            .iter()
            .filter(|p| p.severity == severity)
            .count()
    }
}

impl Registry {
    /// Every built-in and every file of the registry directory, checked; a refused file
    /// (see [`Registry`]) is an error.
    pub fn check_all(&self) -> Vec<Checked> {
        let mut all: Vec<Checked> = self
            .builtins()
            .iter()
            .map(|b| checked(Schema::from_builtin(b)))
            .collect();
        for u in self.user() {
            let origin = Origin::User(u.path.clone());
            let schema = Schema::from_file(&u.path, &u.label, origin.clone());
            all.push(named(&u.label, origin, schema));
        }
        for r in self.refused() {
            all.push(Checked {
                name: r.path.display().to_string(),
                origin: Origin::User(r.path.clone()),
                problems: vec![error("", format!("not used: {}", r.why))],
            });
        }
        all
    }

    /// The schema `spec` (`LABEL|FILE`) checked. Fails only when there is nothing to check:
    /// an unknown label, a file that cannot be read.
    pub fn check_spec(&self, spec: &str) -> Result<Checked, SchemaError> {
        match self.resolve(spec) {
            Ok(s) => Ok(checked(s)),
            Err(SchemaError::Parse { path, message }) => {
                let origin = if super::is_path(spec) {
                    Origin::File(path.clone())
                } else {
                    Origin::User(path.clone())
                };
                Ok(named(
                    spec,
                    origin,
                    Err(SchemaError::Parse { path, message }),
                ))
            }
            Err(e) => Err(e),
        }
    }
}

/// A schema's check; a file that did not parse becomes an error naming `name` and `origin`.
fn named(name: &str, origin: Origin, schema: Result<Schema, SchemaError>) -> Checked {
    match schema {
        Ok(s) => checked(s),
        Err(e) => {
            let message = match e {
                SchemaError::Parse { message, .. } => format!("not JSON: {message}"),
                e => crate::error::chain(&e),
            };
            Checked {
                name: name.to_string(),
                origin,
                problems: vec![error("", message)],
            }
        }
    }
}

fn checked(s: Schema) -> Checked {
    let mut problems = check(&s.value);
    // What the rules do not see but the validator refuses (a `pattern` that is no regex):
    // only looked for when the rules found no error, which would explain it already.
    if !problems.iter().any(|p| p.severity == Severity::Error)
        && let Some(p) = compile_problem(&s.value)
    {
        problems.insert(0, p);
    }
    Checked {
        name: s.name,
        origin: s.origin,
        problems,
    }
}

fn compile_problem(value: &Value) -> Option<Problem> {
    let e = jsonschema::validator_for(value).err()?;
    Some(error(
        e.instance_path().as_str(),
        format!(
            "the validator refuses it: {}",
            super::validate::short_message(&e)
        ),
    ))
}

fn error(pointer: &str, message: String) -> Problem {
    Problem {
        pointer: pointer.to_string(),
        severity: Severity::Error,
        message,
    }
}
