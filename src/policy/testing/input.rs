//! Test-case inputs written as Lua tables → the Rust values the engine would pass.
//!
//! Conversion goes through JSON and the types' own serde, so a test's `ctx` accepts exactly
//! the field names and values (`state = "AUDIT_PENDING"`, `verdict = "retry"`) the engine
//! records; unknown fields are errors with a suggestion, like everywhere else in a policy.

use super::super::lua_ctx::type_name;
use super::super::schema::suggest;
use mlua::{Table, Value};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value as J;

/// Lua tables nested deeper than this in a test input are refused.
const MAX_DEPTH: usize = 32;

/// `base` with the fields of `user` (a Lua table) written over it; `what` names the table in
/// errors (`ctx`, `evidence`).
pub(super) fn overlay<T: Serialize + DeserializeOwned>(
    base: &T,
    what: &str,
    user: &Table,
) -> Result<T, String> {
    overlay_with(base, what, user, Vec::new())
}

/// [`overlay`], also accepting the fields `also` (name, empty value) that `base` leaves out
/// when they are empty (`skip_serializing_if`).
pub(super) fn overlay_with<T: Serialize + DeserializeOwned>(
    base: &T,
    what: &str,
    user: &Table,
    also: Vec<(&str, J)>,
) -> Result<T, String> {
    let J::Object(mut fields) = serde_json::to_value(base).map_err(|e| e.to_string())? else {
        return Err(format!("{what} is not a record"));
    };
    for (name, empty) in also {
        fields.entry(name.to_string()).or_insert(empty);
    }
    let names: Vec<String> = fields.keys().cloned().collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    for pair in user.pairs::<Value, Value>() {
        let (key, value) = pair.map_err(|e| e.to_string())?;
        let Value::String(key) = key else {
            return Err(format!("{what} has a {} key", type_name(&key)));
        };
        let key = key.to_string_lossy();
        if !fields.contains_key(&key) {
            let hint = suggest(&key, &names)
                .map(|s| format!("; did you mean {s}?"))
                .unwrap_or_default();
            return Err(format!("unknown field `{key}` in {what}{hint}"));
        }
        let value = to_json(&value, 0).map_err(|e| format!("{what}.{key}: {e}"))?;
        // Check each field on its own so the error names it (serde's does not).
        let mut trial = fields.clone();
        trial.insert(key.clone(), value.clone());
        serde_json::from_value::<T>(J::Object(trial)).map_err(|e| format!("{what}.{key}: {e}"))?;
        fields.insert(key, value);
    }
    serde_json::from_value(J::Object(fields)).map_err(|e| format!("{what}: {e}"))
}

/// A Lua value as JSON: a table is an array when all its keys are `1..n` (so `{}` is an empty
/// list), an object otherwise.
pub(super) fn to_json(value: &Value, depth: usize) -> Result<J, String> {
    Ok(match value {
        Value::Nil => J::Null,
        Value::Boolean(b) => J::Bool(*b),
        Value::Integer(i) => J::from(*i),
        Value::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => J::from(*n as i64),
        Value::Number(n) => J::from(*n),
        Value::String(s) => J::String(s.to_string_lossy()),
        Value::Table(t) => {
            if depth > MAX_DEPTH {
                return Err(format!("nested deeper than {MAX_DEPTH} levels"));
            }
            let len = t.raw_len();
            if t.pairs::<Value, Value>().count() == len {
                let mut items = Vec::with_capacity(len);
                for item in t.sequence_values::<Value>() {
                    items.push(to_json(&item.map_err(|e| e.to_string())?, depth + 1)?);
                }
                J::Array(items)
            } else {
                let mut map = serde_json::Map::new();
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair.map_err(|e| e.to_string())?;
                    let Value::String(k) = k else {
                        return Err(format!("a table with a {} key", type_name(&k)));
                    };
                    map.insert(k.to_string_lossy(), to_json(&v, depth + 1)?);
                }
                J::Object(map)
            }
        }
        other => return Err(format!("a {} cannot be a test input", type_name(other))),
    })
}
