//! The verdict an agent auditor is asked for, as a JSON Schema: Claude gets it with
//! `--json-schema` (its answer arrives as `structured_output`), Codex with `--output-schema FILE`
//! (sent to the model as the response format; Codex does not check it — the verdict reader does).
//! It follows OpenAI's strict-mode rules (every property required, no others), which Codex's
//! provider enforces. The one copy is the schema registry's built-in `verdict`
//! (`src/schema/builtin/verdict.json`), so `oneshot schema show verdict` prints what agents get.

/// The schema, as JSON text.
pub const VERDICT_SCHEMA: &str = crate::schema::VERDICT.text;

/// The file name shown for the schema in a session's listed command lines. The agent itself
/// gets a private copy in the temp directory ([`super::SchemaFile`]): a confined agent cannot
/// see the session's directory.
pub const VERDICT_SCHEMA_FILE: &str = "verdict-schema.json";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_passes_the_self_check_strict_mode_included() {
        let v: serde_json::Value = serde_json::from_str(VERDICT_SCHEMA).unwrap();
        assert_eq!(crate::schema::check(&v), vec![]);
        assert_eq!(v["additionalProperties"], false);
    }
}
