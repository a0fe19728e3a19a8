//! The registry: built-ins, the user's directory, resolving `LABEL|FILE`.

use crate::schema::{Origin, PROJECT_DIR, Registry, SchemaError, is_path};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

const MINE: &str = r#"{"type": "object", "description": "my answer\nmore text",
  "properties": {"x": {"type": "string"}}, "required": ["x"], "additionalProperties": false}"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn builtins_resolve_by_label() {
    let r = Registry::builtin();
    assert_eq!(
        r.labels(),
        ["verdict", "branch-suggest", "nudgenik", "conflict-resolve"]
    );
    let v = r.resolve("verdict").unwrap();
    assert_eq!(v.origin, Origin::Builtin);
    assert_eq!(
        v.value,
        serde_json::from_str::<serde_json::Value>(crate::agent::VERDICT_SCHEMA).unwrap(),
        "one copy: what the auditor agents get"
    );
    assert!(v.description().starts_with("an auditor's verdict"));
}

#[test]
fn user_schemas_are_files_in_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("schemas");
    let mine = write(&dir, "mine.json", MINE);
    write(&dir, "notes.txt", "not a schema");
    let r = Registry::open(&dir).unwrap();
    assert_eq!(r.labels().last(), Some(&"mine"));
    let s = r.resolve("mine").unwrap();
    assert_eq!(s.origin, Origin::User(mine));
    assert_eq!(s.description(), "my answer");
    assert_eq!(s.check(), vec![]);
    // A directory that does not exist holds nothing.
    let none = Registry::open(&tmp.path().join("absent")).unwrap();
    assert_eq!(none.labels().len(), 4);
}

#[test]
fn a_builtin_label_or_a_bad_name_is_refused_not_used() {
    let tmp = tempfile::tempdir().unwrap();
    let shadow = write(tmp.path(), "verdict.json", MINE);
    let odd = write(tmp.path(), "-odd.json", MINE);
    let r = Registry::open(tmp.path()).unwrap();
    assert!(r.user().is_empty());
    let refused: Vec<&Path> = r.refused().iter().map(|f| f.path.as_path()).collect();
    assert_eq!(refused, [odd.as_path(), shadow.as_path()]);
    assert!(r.refused()[1].why.contains("built-ins are not replaced"));
    // The label still means the built-in.
    assert_eq!(r.resolve("verdict").unwrap().origin, Origin::Builtin);
}

#[test]
fn a_spec_with_a_slash_or_json_suffix_is_a_file() {
    assert!(is_path("./x"));
    assert!(is_path("x.json"));
    assert!(is_path("/abs/x"));
    assert!(!is_path("verdict"));
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "answer.json", MINE);
    let s = Registry::builtin().resolve(file.to_str().unwrap()).unwrap();
    assert_eq!(s.origin, Origin::File(file));
}

#[test]
fn errors_name_what_and_what_to_do() {
    let r = Registry::builtin();
    let e = r.resolve("verdit").unwrap_err();
    assert!(matches!(e, SchemaError::UnknownLabel { .. }));
    assert_eq!(
        e.to_string(),
        "find schema `verdit`: no such label (known: verdict, branch-suggest, nudgenik, \
         conflict-resolve); a file is named by a path with a `/` or ending in .json, and \
         `oneshot schema list` shows the labels"
    );
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing.json");
    let e = r.resolve(missing.to_str().unwrap()).unwrap_err();
    assert_eq!(e.to_string(), format!("read schema {}", missing.display()));
    let broken = write(tmp.path(), "broken.json", "{\"type\": ");
    let e = r.resolve(broken.to_str().unwrap()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "parse schema {}: EOF while parsing a value at line 1 column 9",
            broken.display()
        )
    );
}

#[test]
fn the_directory_is_the_flag_then_the_variable_then_the_project() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().canonicalize().unwrap();
    std::fs::write(project.join("oneshot.toml"), "").unwrap();
    let sub = project.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let var = |k: &str| (k == "ONESHOT_SCHEMAS").then(|| OsString::from("/from/env"));
    let no_var = |_: &str| None;
    assert_eq!(
        Registry::locate(Some(Path::new("/flag")), var, &sub),
        PathBuf::from("/flag")
    );
    assert_eq!(
        Registry::locate(None, var, &sub),
        PathBuf::from("/from/env")
    );
    assert_eq!(
        Registry::locate(None, no_var, &sub),
        project.join(PROJECT_DIR)
    );
}

#[test]
fn checking_by_name_reports_what_the_rules_and_the_validator_find() {
    let tmp = tempfile::tempdir().unwrap();
    let regex = r#"{"type": "object", "properties": {"a": {"type": "string", "pattern": "("}},
        "required": ["a"], "additionalProperties": false}"#;
    let bad_regex = write(tmp.path(), "regex.json", regex);
    write(tmp.path(), "notjson.json", "nope");
    let r = Registry::open(tmp.path()).unwrap();
    let c = r.check_spec("regex").unwrap();
    assert_eq!(c.origin, Origin::User(bad_regex.clone()));
    assert_eq!(c.display_name(), bad_regex.display().to_string());
    assert_eq!(c.count(crate::schema::Severity::Error), 1, "{c:#?}");
    assert_eq!(c.problems[0].pointer, "/properties/a/pattern");
    let c = r.check_spec("notjson").unwrap();
    assert!(
        c.problems[0]
            .message
            .starts_with("not JSON: expected ident at line 1"),
        "{c:#?}"
    );
    assert!(matches!(
        r.check_spec("absent"),
        Err(SchemaError::UnknownLabel { .. })
    ));
    let all = r.check_all();
    assert_eq!(all.len(), 6);
    assert!(all[..4].iter().all(|c| c.problems.is_empty()));
}
