//! Re-indenting keeps the author's key order and the value.

use crate::schema::{BUILTINS, pretty};
use proptest::prelude::*;

#[test]
fn the_builtins_print_as_written() {
    for b in BUILTINS {
        let again = pretty(b.text);
        let a: serde_json::Value = serde_json::from_str(b.text).unwrap();
        let b2: serde_json::Value = serde_json::from_str(&again).unwrap();
        assert_eq!(a, b2, "{}", b.label);
        // Already indented by two spaces: re-indenting only packs short arrays open.
        assert!(again.starts_with("{\n  \"type\": \"object\",\n  \"properties\": {"));
    }
}

#[test]
fn strings_keep_their_brackets_commas_and_escapes() {
    let text = r#"{"a":"x, {y}: [z] \" ,","b":[],"c":{ },"d":[1,2]}"#;
    assert_eq!(
        pretty(text),
        "{\n  \"a\": \"x, {y}: [z] \\\" ,\",\n  \"b\": [],\n  \"c\": {},\n  \"d\": [\n    1,\n    2\n  ]\n}\n"
    );
}

proptest! {
    #[test]
    fn the_value_is_kept(v in any::<Vec<(String, Option<i32>)>>()) {
        let value = serde_json::json!({ "list": v });
        let out = pretty(&value.to_string());
        prop_assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap(), value);
    }

    #[test]
    fn never_panics(text in ".{0,200}") {
        let _ = pretty(&text);
    }
}
