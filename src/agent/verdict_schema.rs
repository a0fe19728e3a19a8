//! The verdict an agent auditor is asked for, as a JSON Schema: Claude gets it with
//! `--json-schema` (its answer arrives as `structured_output`), Codex with `--output-schema FILE`
//! (sent to the model as the response format; Codex does not check it — the verdict reader does).
//! It follows OpenAI's strict-mode rules (every property required, no others), which Codex's
//! provider enforces.

/// The schema, compact.
pub const VERDICT_SCHEMA: &str = r#"{"type":"object","properties":{"verdict":{"type":"string","enum":["done","retry","impossible"],"description":"done: the task is complete and correct; retry: it is not, say what to fix; impossible: it cannot be done"},"reason":{"type":"string","description":"why; for retry, what to fix"},"confidence":{"type":"number","minimum":0,"maximum":1},"open_criteria":{"type":"array","items":{"type":"string"},"description":"what is still missing, one item per criterion"}},"required":["verdict","reason","confidence","open_criteria"],"additionalProperties":false}"#;

/// The file name the schema is written to in a session's directory, for `--output-schema`.
pub const VERDICT_SCHEMA_FILE: &str = "verdict-schema.json";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_is_strict_json_schema() {
        let v: serde_json::Value = serde_json::from_str(VERDICT_SCHEMA).unwrap();
        let props = v["properties"].as_object().unwrap();
        let required: Vec<&str> = v["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        assert_eq!(props.len(), required.len(), "strict mode: all required");
        assert!(required.iter().all(|r| props.contains_key(*r)));
        assert_eq!(v["additionalProperties"], false);
    }
}
