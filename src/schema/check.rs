//! The self-check (seed 002 §Validation, made recursive): what makes a schema unusable for
//! any agent, and what OpenAI's strict mode (Codex's `--output-schema`, and any provider with
//! strict structured outputs) refuses. Every problem carries the JSON pointer of the place in
//! the schema it is about.
//!
//! **Errors** break the schema for every consumer: it is not a valid JSON Schema (checked
//! against its meta-schema), its root is not an object schema, a `required` key is missing
//! from `properties`, or `additionalProperties` is a schema while `properties` is absent
//! (providers then have nothing to name the keys by). **Warnings** are strict-mode rules
//! only: every object closed with `"additionalProperties": false`, every property listed in
//! `required` (an optional field is written nullable instead), only the keywords and formats
//! strict mode supports, no `anyOf` at the root, at most 10 levels of nesting, 5,000
//! properties and 1,000 enum values.

use serde_json::{Map, Value};
use std::fmt;

/// How bad a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Needed for OpenAI's strict mode only; other agents accept the schema.
    Warning,
    /// The schema is broken for every agent.
    Error,
}

/// One thing wrong with a schema, and where.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// The JSON pointer (RFC 6901) of the place in the schema; `""` is the root.
    pub pointer: String,
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong, and what to write instead.
    pub message: String,
}

impl fmt::Display for Problem {
    /// `/properties/x: message`, the root shown as `/`; warnings say so.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let warning = match self.severity {
            Severity::Warning => "warning: ",
            Severity::Error => "",
        };
        write!(
            f,
            "{}: {warning}{}",
            super::pointer_display(&self.pointer),
            self.message
        )
    }
}

/// Keywords OpenAI's strict mode accepts (its "supported schemas" list, plus the annotations
/// that change nothing).
pub(crate) const STRICT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "description",
    "title",
    "$schema",
    "$id",
    "$comment",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

/// String formats strict mode accepts.
pub(crate) const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// JSON Schema's type names.
const TYPES: &str = "string, number, integer, boolean, object, array, null";

/// Strict mode's limits.
const MAX_DEPTH: usize = 10;
const MAX_PROPERTIES: usize = 5000;
const MAX_ENUM_VALUES: usize = 1000;

/// Keywords whose value is one subschema.
const ONE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
];
/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAYS: &[&str] = &["anyOf", "allOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Every problem of `schema`, errors first, then by pointer. Empty: the schema is fine for
/// every agent, strict mode included.
///
/// ```
/// let schema = serde_json::json!({
///     "type": "object",
///     "properties": {"a": {"type": "string"}},
///     "required": ["a", "b"],
///     "additionalProperties": false
/// });
/// let problems = oneshot::schema::check(&schema);
/// assert_eq!(problems[0].to_string(), "/required/1: required key \"b\" is not in properties");
/// ```
pub fn check(schema: &Value) -> Vec<Problem> {
    let mut c = Checker::default();
    match schema {
        Value::Object(root) => {
            c.meta(schema);
            if root.get("type").and_then(Value::as_str) != Some("object") {
                c.error(
                    "",
                    "the root must be an object schema (\"type\": \"object\")",
                );
            }
            if root.contains_key("anyOf") {
                c.warn("/anyOf", "strict mode: the root may not be an anyOf");
            }
            c.walk(root, "", 0);
        }
        _ => c.error("", "a schema must be a JSON object"),
    }
    if c.properties > MAX_PROPERTIES {
        c.warn(
            "",
            format!(
                "strict mode: {} properties in all, at most {MAX_PROPERTIES}",
                c.properties
            ),
        );
    }
    if c.enum_values > MAX_ENUM_VALUES {
        c.warn(
            "",
            format!(
                "strict mode: {} enum values in all, at most {MAX_ENUM_VALUES}",
                c.enum_values
            ),
        );
    }
    let mut problems = c.problems;
    problems.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.pointer.cmp(&b.pointer)));
    problems.dedup();
    problems
}

#[derive(Default)]
struct Checker {
    problems: Vec<Problem>,
    properties: usize,
    enum_values: usize,
}

impl Checker {
    fn error(&mut self, pointer: &str, message: impl Into<String>) {
        self.push(pointer, Severity::Error, message.into());
    }

    fn warn(&mut self, pointer: &str, message: impl Into<String>) {
        self.push(pointer, Severity::Warning, message.into());
    }

    fn push(&mut self, pointer: &str, severity: Severity, message: String) {
        self.problems.push(Problem {
            pointer: pointer.to_string(),
            severity,
            message,
        });
    }

    /// The schema against its draft's meta-schema: a `type` that is no type, a `required`
    /// that is not a list of strings, a `minimum` that is not a number, … — what the rules
    /// below take for granted.
    fn meta(&mut self, schema: &Value) {
        let validator = match jsonschema::meta::validator_for(schema) {
            Ok(v) => v,
            Err(e) => return self.error("/$schema", format!("unknown meta-schema: {e}")),
        };
        for e in validator.iter_errors(schema) {
            let at = e.instance_path().as_str();
            // The meta-schema's own words for a bad `type` ("not valid under any of the
            // schemas listed in the 'anyOf' keyword") do not say what to write.
            let message = if at.ends_with("/type") {
                format!(
                    "{} is not a type; use one of {TYPES} (or a list of them)",
                    e.instance()
                )
            } else {
                super::validate::short_message(&e)
            };
            self.error(at, format!("not JSON Schema: {message}"));
        }
    }

    /// One subschema at `at`, `depth` objects deep, and everything below it.
    fn walk(&mut self, s: &Map<String, Value>, at: &str, depth: usize) {
        let props = s.get("properties").and_then(Value::as_object);
        if let Some(required) = s.get("required").and_then(Value::as_array) {
            for (i, key) in required.iter().enumerate() {
                if let Some(key) = key.as_str()
                    && !props.is_some_and(|p| p.contains_key(key))
                {
                    self.error(
                        &format!("{at}/required/{i}"),
                        format!("required key {key:?} is not in properties"),
                    );
                }
            }
        }
        let additional = s.get("additionalProperties");
        if additional.is_some_and(Value::is_object) && props.is_none() {
            self.error(
                at,
                "additionalProperties is a schema but properties is missing; write \
                 \"properties\": {} (or list the keys)",
            );
        }
        let is_object = s.get("type").and_then(Value::as_str) == Some("object")
            || s.get("type")
                .and_then(Value::as_array)
                .is_some_and(|t| t.iter().any(|t| t == "object"))
            || props.is_some();
        let depth = depth + usize::from(is_object);
        if is_object {
            self.strict_object(s, props, additional, at, depth);
        }
        self.strict_keywords(s, at);
        self.children(s, at, depth);
    }

    /// Strict mode: objects closed, every property required, nesting bounded.
    fn strict_object(
        &mut self,
        s: &Map<String, Value>,
        props: Option<&Map<String, Value>>,
        additional: Option<&Value>,
        at: &str,
        depth: usize,
    ) {
        if additional != Some(&Value::Bool(false)) {
            self.warn(
                &format!("{at}/additionalProperties"),
                "strict mode: every object needs \"additionalProperties\": false",
            );
        }
        // A `required` that is no list is an error already (the meta-schema's): one problem
        // is enough, so no property is said to be missing from it.
        let required: Option<Vec<&str>> = match s.get("required") {
            Some(Value::Array(r)) => Some(r.iter().filter_map(Value::as_str).collect()),
            None => Some(Vec::new()),
            Some(_) => None,
        };
        for key in props.into_iter().flat_map(Map::keys) {
            self.properties += 1;
            if required
                .as_ref()
                .is_some_and(|r| !r.contains(&key.as_str()))
            {
                self.warn(
                    &format!("{at}/properties/{}", escape(key)),
                    format!(
                        "strict mode: property {key:?} must be listed in required (make it \
                         optional with a null type instead: \"type\": [\"string\", \"null\"])"
                    ),
                );
            }
        }
        if depth == MAX_DEPTH + 1 {
            self.warn(
                at,
                format!("strict mode: objects nest at most {MAX_DEPTH} levels deep"),
            );
        }
    }

    /// Strict mode: supported keywords and formats only, a type on every leaf.
    fn strict_keywords(&mut self, s: &Map<String, Value>, at: &str) {
        for key in s.keys() {
            if !STRICT_KEYWORDS.contains(&key.as_str()) {
                self.warn(
                    &format!("{at}/{}", escape(key)),
                    format!("strict mode: keyword {key:?} is not supported"),
                );
            }
        }
        if let Some(format) = s.get("format").and_then(Value::as_str)
            && !STRICT_FORMATS.contains(&format)
        {
            self.warn(
                &format!("{at}/format"),
                format!(
                    "strict mode: format {format:?} is not supported (supported: {})",
                    STRICT_FORMATS.join(", ")
                ),
            );
        }
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            self.enum_values += values.len();
        }
        let typed = ["type", "anyOf", "enum", "const", "$ref"]
            .iter()
            .any(|k| s.contains_key(*k));
        if !typed {
            self.warn(
                at,
                "strict mode: every schema needs a \"type\" (or anyOf, enum, const, $ref)",
            );
        }
    }

    /// Recurse into every subschema, wherever JSON Schema puts one.
    fn children(&mut self, s: &Map<String, Value>, at: &str, depth: usize) {
        for (key, value) in s {
            let here = format!("{at}/{}", escape(key));
            let key = key.as_str();
            match value {
                Value::Object(sub) if ONE_SCHEMA.contains(&key) => self.walk(sub, &here, depth),
                Value::Object(map) if SCHEMA_MAPS.contains(&key) => {
                    for (name, sub) in map {
                        if let Value::Object(sub) = sub {
                            self.walk(sub, &format!("{here}/{}", escape(name)), depth);
                        }
                    }
                }
                Value::Array(items) if SCHEMA_ARRAYS.contains(&key) => {
                    for (i, sub) in items.iter().enumerate() {
                        if let Value::Object(sub) = sub {
                            self.walk(sub, &format!("{here}/{i}"), depth);
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// A key as one JSON pointer segment (RFC 6901: `~` → `~0`, `/` → `~1`).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
