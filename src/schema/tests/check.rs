//! The self-check: exact pointers for each rule, and every built-in clean.

use crate::schema::{BUILTINS, Problem, Schema, Severity, check};
use serde_json::json;

/// The problems as `pointer: message` lines (warnings marked), for exact comparisons.
fn lines(schema: serde_json::Value) -> Vec<String> {
    check(&schema).iter().map(Problem::to_string).collect()
}

/// The seed's `TestSchemaRegistry`: every built-in passes, strict mode included.
#[test]
fn every_builtin_passes_the_self_check() {
    assert_eq!(BUILTINS.len(), 4);
    for b in BUILTINS {
        let schema = Schema::from_builtin(b);
        assert_eq!(schema.check(), vec![], "{}", b.label);
        schema.validator().unwrap();
        assert!(!b.description.is_empty());
    }
}

#[test]
fn a_clean_nested_schema_has_no_problems() {
    let schema = json!({
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": ["string", "null"]}},
                    "required": ["name"],
                    "additionalProperties": false
                }
            },
            "kind": {"anyOf": [{"type": "string"}, {"type": "number"}]}
        },
        "required": ["items", "kind"],
        "additionalProperties": false
    });
    assert_eq!(lines(schema), Vec::<String>::new());
}

#[test]
fn a_required_key_missing_from_properties_is_an_error_at_its_index() {
    let schema = json!({
        "type": "object",
        "properties": {
            "outer": {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": ["a", "b"],
                "additionalProperties": false
            }
        },
        "required": ["outer", "missing"],
        "additionalProperties": false
    });
    assert_eq!(
        lines(schema),
        [
            "/properties/outer/required/1: required key \"b\" is not in properties",
            "/required/1: required key \"missing\" is not in properties",
        ]
    );
}

#[test]
fn additional_properties_as_a_schema_needs_explicit_properties() {
    // The seed's conflict-resolve `files`: a map of file → action.
    let schema = json!({
        "type": "object",
        "properties": {
            "files": {
                "type": "object",
                "additionalProperties": {"type": "string"}
            }
        },
        "required": ["files"],
        "additionalProperties": false
    });
    let problems = check(&schema);
    assert_eq!(problems[0].severity, Severity::Error);
    assert_eq!(
        problems[0].to_string(),
        "/properties/files: additionalProperties is a schema but properties is missing; \
         write \"properties\": {} (or list the keys)"
    );
    // Strict mode wants it closed as well: a warning at the keyword.
    assert_eq!(
        problems[1].to_string(),
        "/properties/files/additionalProperties: warning: strict mode: every object needs \
         \"additionalProperties\": false"
    );
    assert_eq!(problems.len(), 2, "{problems:#?}");
}

#[test]
fn strict_mode_rules_are_warnings_with_pointers() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "when": {"type": "string", "format": "uri"},
            "note": {"type": "string"},
            "tags": {"type": "array", "items": {"uniqueItems": true}},
            "a/b~c": {"type": "object", "properties": {}, "required": []}
        },
        "required": ["name", "when", "tags", "a/b~c"]
    });
    let problems = check(&schema);
    assert!(problems.iter().all(|p| p.severity == Severity::Warning));
    assert_eq!(
        problems.iter().map(Problem::to_string).collect::<Vec<_>>(),
        [
            "/additionalProperties: warning: strict mode: every object needs \
             \"additionalProperties\": false",
            "/properties/a~1b~0c/additionalProperties: warning: strict mode: every object \
             needs \"additionalProperties\": false",
            "/properties/name/minLength: warning: strict mode: keyword \"minLength\" is not \
             supported",
            "/properties/note: warning: strict mode: property \"note\" must be listed in \
             required (make it optional with a null type instead: \"type\": [\"string\", \
             \"null\"])",
            "/properties/tags/items: warning: strict mode: every schema needs a \"type\" (or \
             anyOf, enum, const, $ref)",
            "/properties/tags/items/uniqueItems: warning: strict mode: keyword \
             \"uniqueItems\" is not supported",
            "/properties/when/format: warning: strict mode: format \"uri\" is not supported \
             (supported: date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid)",
        ]
    );
}

#[test]
fn the_root_must_be_an_object_schema() {
    assert_eq!(
        lines(json!({"type": "array", "items": {"type": "string"}})),
        ["/: the root must be an object schema (\"type\": \"object\")"]
    );
    assert_eq!(lines(json!([1])), ["/: a schema must be a JSON object"]);
    let any_of = lines(json!({
        "anyOf": [{"type": "object", "properties": {}, "required": [], "additionalProperties": false}]
    }));
    assert_eq!(
        any_of,
        [
            "/: the root must be an object schema (\"type\": \"object\")",
            "/anyOf: warning: strict mode: the root may not be an anyOf",
        ]
    );
}

#[test]
fn what_is_not_json_schema_is_an_error_at_its_pointer() {
    let problems = lines(json!({
        "type": "object",
        "properties": {"n": {"type": "integr"}, "m": {"type": "number", "minimum": "0"}},
        "required": ["n", "m"],
        "additionalProperties": false
    }));
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].starts_with("/properties/m/minimum: not JSON Schema: "),
        "{problems:#?}"
    );
    assert_eq!(
        problems[1],
        "/properties/n/type: not JSON Schema: \"integr\" is not a type; use one of string, \
         number, integer, boolean, object, array, null (or a list of them)"
    );
    // A `required` that is no list: one error, no warning per property.
    let problems = lines(json!({
        "type": "object",
        "properties": {"r": {"type": "string"}},
        "required": "r",
        "additionalProperties": false
    }));
    assert_eq!(
        problems,
        ["/required: not JSON Schema: \"r\" is not of type \"array\""]
    );
}

#[test]
fn strict_mode_limits() {
    // Eleven nested objects: one warning, at the eleventh.
    let mut schema =
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false});
    for _ in 0..10 {
        schema = json!({
            "type": "object",
            "properties": {"x": schema},
            "required": ["x"],
            "additionalProperties": false
        });
    }
    let deep = "/properties/x".repeat(10);
    assert_eq!(
        lines(schema),
        [format!(
            "{deep}: warning: strict mode: objects nest at most 10 levels deep"
        )]
    );
    let values: Vec<String> = (0..1001).map(|i| i.to_string()).collect();
    let many = json!({
        "type": "object",
        "properties": {"e": {"type": "string", "enum": values}},
        "required": ["e"],
        "additionalProperties": false
    });
    assert_eq!(
        lines(many),
        ["/: warning: strict mode: 1001 enum values in all, at most 1000"]
    );
}

#[test]
fn definitions_and_combinators_are_walked() {
    let schema = json!({
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/point"}},
        "required": ["p"],
        "additionalProperties": false,
        "$defs": {
            "point": {
                "type": "object",
                "properties": {"x": {"type": "number"}},
                "required": ["x", "y"],
                "additionalProperties": false
            }
        }
    });
    assert_eq!(
        lines(schema),
        ["/$defs/point/required/1: required key \"y\" is not in properties"]
    );
}

#[test]
fn an_unknown_meta_schema_is_an_error_not_a_fetch() {
    let schema = json!({
        "$schema": "https://example.com/my-meta",
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": false
    });
    let problems = check(&schema);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].pointer, "/$schema");
    assert!(
        Schema::from_builtin(&crate::schema::VERDICT)
            .validator()
            .is_ok()
    );
    assert!(crate::schema::Validator::new("m", &schema).is_err());
}

/// docs/schemas.md lists every built-in and the strict-mode keywords and formats as checked.
#[test]
fn the_doc_says_what_the_check_does() {
    let doc = include_str!("../../../docs/schemas.md");
    for b in BUILTINS {
        assert!(doc.contains(&format!("| `{}` |", b.label)), "{}", b.label);
    }
    for word in crate::schema::check::STRICT_KEYWORDS
        .iter()
        .chain(crate::schema::check::STRICT_FORMATS)
    {
        assert!(
            doc.contains(&format!("`{word}`")),
            "docs/schemas.md lacks `{word}`"
        );
    }
}
