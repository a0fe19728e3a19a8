//! `oneshot.parse_verdict`: the built-in verdict reader, for a policy that adds its own rules on
//! top of it instead of re-implementing it in Lua.

use super::arg;
use crate::policy::verdict::{read_verdict, verdict_word};
use mlua::{Function, Lua, Value};

/// `oneshot.parse_verdict(text)` → `{ verdict = "done"|"retry"|"impossible", reason = …,
/// confidence = … }`, or `nil` when `text` holds no verdict. Linear in `text` (the regex crate,
/// and one JSON parse per line that looks like an object), so it stays within the hook's budget.
pub(super) fn parse_fn(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|lua, text: Value| {
        let text = arg(lua, "parse_verdict", "the text", &text)?.to_string_lossy();
        let Some(v) = read_verdict(&text) else {
            return Ok(Value::Nil);
        };
        let t = lua.create_table_with_capacity(0, 3)?;
        t.raw_set("verdict", verdict_word(v.verdict))?;
        t.raw_set("reason", v.reason)?;
        t.raw_set("confidence", v.confidence)?;
        Ok(Value::Table(t))
    })
}
