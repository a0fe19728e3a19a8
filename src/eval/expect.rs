//! What a case's answer must say, whether an answer says it, and how answers are shown in the
//! summary table: by the fields the case checks, so that k answers that differ only in their
//! prose (an `evidence` list, a `summary`) count as the same answer.

use crate::schema::Schema;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// How many characters of an answer the table shows when it has to show JSON.
const SHOWN: usize = 40;

/// What a case's answer must say.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Expect {
    /// `want:` — the answer has each of these fields with this value; other fields are free.
    Fields(Map<String, Value>),
    /// `golden: FILE` — the answer is this whole object.
    Golden {
        /// The file.
        path: PathBuf,
        /// Its content; `None` when it does not exist yet (`--update` writes it).
        value: Option<Value>,
    },
}

impl Expect {
    /// A `want:` value: a mapping of fields, or one value for the schema's classification field
    /// (`want: Completed` is `want: {state: Completed}` for `nudgenik`: the first `required`
    /// property whose schema is an `enum`). Each field must be one the schema declares.
    pub fn from_want(want: Value, schema: &Schema) -> Result<Expect, String> {
        let fields = match want {
            Value::Object(m) if !m.is_empty() => m,
            Value::Object(_) => return Err("`want` is empty".into()),
            Value::Array(_) | Value::Null => {
                return Err("`want` is a mapping of fields, or one value".into());
            }
            one => {
                let field = classification_field(&schema.value).ok_or_else(|| {
                    format!(
                        "`want` is one value, but the schema {} has no required enum field \
                         for it to be; write `want: {{FIELD: VALUE}}`",
                        schema.name
                    )
                })?;
                Map::from_iter([(field, one)])
            }
        };
        if let Some(props) = schema.value.get("properties").and_then(Value::as_object)
            && let Some(unknown) = fields.keys().find(|k| !props.contains_key(*k))
        {
            return Err(format!(
                "`want` names the field {unknown:?}, which the schema {} does not have (it has: {})",
                schema.name,
                props.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        Ok(Expect::Fields(fields))
    }

    /// Whether `answer` says what is expected. A golden file not written yet expects nothing.
    pub fn matches(&self, answer: &Value) -> bool {
        match self {
            Expect::Fields(fields) => fields
                .iter()
                .all(|(k, want)| answer.get(k).is_some_and(|got| same(want, got))),
            Expect::Golden { value, .. } => value.as_ref().is_some_and(|g| same(g, answer)),
        }
    }

    /// What decides whether an answer passes: the checked fields, or the whole answer. Answers
    /// with the same key are counted together in the table.
    pub fn key(&self, answer: &Value) -> Value {
        match self {
            Expect::Fields(fields) => Value::Object(
                fields
                    .keys()
                    .map(|k| (k.clone(), answer.get(k).cloned().unwrap_or(Value::Null)))
                    .collect(),
            ),
            Expect::Golden { .. } => answer.clone(),
        }
    }

    /// The expectation as the table shows it.
    pub fn show_want(&self, schema: &Schema) -> String {
        match self {
            Expect::Fields(_) => self.show(schema, &Value::Object(self.fields_map())),
            Expect::Golden { value: Some(v), .. } => self.show(schema, v),
            Expect::Golden { value: None, .. } => "(no golden yet)".into(),
        }
    }

    /// An answer's key ([`Expect::key`]) as the table shows it: the value when one field is
    /// checked, `field=value, …` for several; for a golden file, the schema's classification
    /// field (else the JSON, cut short), marked when the whole answer is not the golden one.
    pub fn show(&self, schema: &Schema, key: &Value) -> String {
        match self {
            Expect::Fields(fields) if fields.len() == 1 => key
                .as_object()
                .and_then(|m| m.values().next())
                .map(scalar)
                .unwrap_or_default(),
            Expect::Fields(_) => key
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", scalar(v)))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default(),
            Expect::Golden { value, .. } => {
                let shown = classification_field(&schema.value)
                    .and_then(|f| key.get(&f).map(scalar))
                    .unwrap_or_else(|| cut(&key.to_string()));
                match value {
                    Some(g) if !same(g, key) => format!("{shown} (not golden)"),
                    _ => shown,
                }
            }
        }
    }

    fn fields_map(&self) -> Map<String, Value> {
        match self {
            Expect::Fields(f) => f.clone(),
            Expect::Golden { .. } => Map::new(),
        }
    }
}

/// The field a classification schema classifies by: the first `required` property whose
/// schema is an `enum` (`state` in `nudgenik`, `verdict` in `verdict`).
pub fn classification_field(schema: &Value) -> Option<String> {
    let props = schema.get("properties")?.as_object()?;
    schema
        .get("required")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find(|k| props.get(*k).is_some_and(|p| p.get("enum").is_some()))
        .map(str::to_string)
}

/// JSON equality where numbers compare by value: YAML's `1` is JSON's `1.0`.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// A string without its quotes; anything else as compact JSON.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => cut(&other.to_string()),
    }
}

fn cut(s: &str) -> String {
    if s.chars().count() <= SHOWN {
        return s.to_string();
    }
    let mut t: String = s.chars().take(SHOWN - 1).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Registry;
    use serde_json::json;

    #[test]
    fn one_value_means_the_classification_field() {
        let s = Registry::builtin().resolve("nudgenik").unwrap();
        let e = Expect::from_want(json!("Completed"), &s).unwrap();
        assert_eq!(
            e,
            Expect::Fields(Map::from_iter([("state".into(), json!("Completed"))]))
        );
        let answer =
            json!({"state": "Completed", "confidence": 0.9, "evidence": [], "summary": "x"});
        assert!(e.matches(&answer));
        assert!(!e.matches(&json!({"state": "Waiting"})));
        assert_eq!(e.show(&s, &e.key(&answer)), "Completed");
        let bs = Registry::builtin().resolve("branch-suggest").unwrap();
        assert!(
            Expect::from_want(json!("x"), &bs)
                .unwrap_err()
                .contains("no required enum")
        );
        assert!(
            Expect::from_want(json!({"stat": "x"}), &s)
                .unwrap_err()
                .contains("\"stat\"")
        );
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(same(&json!({"c": 1}), &json!({"c": 1.0})));
        assert!(!same(&json!([1, 2]), &json!([1])));
    }
}
