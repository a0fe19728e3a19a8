//! `oneshot.json_decode`: JSON text → Lua values, capped in size and depth.

use super::arg;
use mlua::{Function, Lua, Table, Value};

/// Objects and arrays nested deeper than this are refused (each level is a Lua table, and a
/// deep structure is how a hostile auditor output would try to exhaust the stack).
pub(crate) const MAX_JSON_DEPTH: usize = 64;

/// The value JSON `null` decodes to: a frozen, empty table that prints as `oneshot.null`, so
/// arrays keep their length and `v == oneshot.null` tells a null from a missing key.
pub(super) fn null_sentinel(lua: &Lua) -> mlua::Result<Table> {
    let meta = lua.create_table()?;
    meta.raw_set(
        "__tostring",
        lua.create_function(|_, _: Value| Ok("oneshot.null"))?,
    )?;
    meta.raw_set("__metatable", false)?;
    meta.set_readonly(true);
    let null = lua.create_table()?;
    null.set_metatable(Some(meta))?;
    null.set_readonly(true);
    Ok(null)
}

/// `oneshot.json_decode(s)` → value, or `nil, message` when `s` is not JSON (auditor output
/// often is not, and a policy should not need `pcall` to find out).
pub(super) fn decode_fn(lua: &Lua, null: Table) -> mlua::Result<Function> {
    lua.create_function(move |lua, text: Value| {
        let text = arg(lua, "json_decode", "the text", &text)?;
        let parsed: serde_json::Value = match serde_json::from_slice(&text.as_bytes()) {
            Ok(v) => v,
            Err(e) => return Ok((Value::Nil, Some(format!("invalid JSON: {e}")))),
        };
        match to_lua(lua, &parsed, &null, 1) {
            Ok(v) => Ok((v, None)),
            Err(Fail::Deep) => Ok((
                Value::Nil,
                Some(format!(
                    "JSON nested deeper than {MAX_JSON_DEPTH} levels is not decoded"
                )),
            )),
            // Out of memory: let the host report it as the memory cap.
            Err(Fail::Lua(e)) => Err(e),
        }
    })
}

/// Why a decoded value could not be built.
enum Fail {
    /// The structure is deeper than [`MAX_JSON_DEPTH`].
    Deep,
    /// Lua could not allocate.
    Lua(mlua::Error),
}

impl From<mlua::Error> for Fail {
    fn from(e: mlua::Error) -> Self {
        Fail::Lua(e)
    }
}

fn to_lua(lua: &Lua, v: &serde_json::Value, null: &Table, depth: usize) -> Result<Value, Fail> {
    use serde_json::Value as J;
    Ok(match v {
        J::Null => Value::Table(null.clone()),
        J::Bool(b) => Value::Boolean(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => Value::String(lua.create_string(s)?),
        J::Array(items) => {
            if depth > MAX_JSON_DEPTH {
                return Err(Fail::Deep);
            }
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item, null, depth + 1)?)?;
            }
            Value::Table(t)
        }
        J::Object(map) => {
            if depth > MAX_JSON_DEPTH {
                return Err(Fail::Deep);
            }
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, item) in map {
                t.raw_set(k.as_str(), to_lua(lua, item, null, depth + 1)?)?;
            }
            Value::Table(t)
        }
    })
}
