//! `oneshot schema list|show|check` through the real binary: the built-ins, a user registry
//! (the project's `.oneshot/schemas`, `--registry`, `$ONESHOT_SCHEMAS`) with broken schemas in
//! it, and the exit codes.

use crate::common;

use common::{World, code, text};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A user schema that passes every rule.
const TRIAGE: &str = r#"{
  "type": "object",
  "description": "how urgent an issue is",
  "properties": {"urgency": {"type": "string", "enum": ["now", "later"]}},
  "required": ["urgency"],
  "additionalProperties": false
}"#;

/// A required key missing from properties (an error), and an open object (a warning).
const BROKEN: &str = r#"{"type": "object", "properties": {"a": {"type": "string"}},
  "required": ["a", "b"]}"#;

/// Fine for every agent but OpenAI's strict mode: `note` is not required.
const LOOSE: &str = r#"{"type": "object", "properties": {"note": {"type": "string"}},
  "required": [], "additionalProperties": false}"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The project's own registry: `.oneshot/schemas` beside the workdir's `oneshot.toml`.
fn project_registry(w: &World) -> PathBuf {
    std::fs::write(w.work().join("oneshot.toml"), "").unwrap();
    w.work().canonicalize().unwrap().join(".oneshot/schemas")
}

#[test]
fn list_shows_the_builtins_and_the_projects_schemas() {
    let w = World::new();
    let dir = project_registry(&w);
    let out = w.cmd().args(["schema", "list"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let listed = stdout(&out);
    let labels: Vec<&str> = listed
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        labels[..4],
        ["verdict", "branch-suggest", "nudgenik", "conflict-resolve"]
    );
    assert!(listed.starts_with("LABEL "), "{listed}");
    assert!(
        listed.ends_with(&format!("registry: {} (absent)\n", dir.display())),
        "{listed}"
    );

    // A file in a subdirectory's project registry is found from anywhere inside it.
    let triage = write(&dir, "triage.json", TRIAGE);
    let sub = w.work().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let out = w
        .cmd()
        .args(["schema", "list"])
        .current_dir(&sub)
        .output()
        .unwrap();
    let listed = stdout(&out);
    let row = listed
        .lines()
        .find(|l| l.starts_with("triage "))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(row.contains(&triage.display().to_string()), "{row}");
    assert!(row.ends_with("how urgent an issue is"), "{row}");

    // --json: one object per schema.
    let out = w.cmd().args(["schema", "list", "--json"]).output().unwrap();
    let rows: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0]["label"], "verdict");
    assert_eq!(rows[0]["origin"], "builtin");
    assert_eq!(rows[0]["path"], Value::Null);
    assert_eq!(rows[4]["origin"], "user");
    assert_eq!(rows[4]["path"], triage.display().to_string());
}

#[test]
fn show_prints_a_schema_in_its_own_order() {
    let w = World::new();
    let out = w
        .cmd()
        .args(["schema", "show", "verdict"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let sent: Value = serde_json::from_str(oneshot::agent::VERDICT_SCHEMA).unwrap();
    assert_eq!(shown, sent, "show prints what agent auditors are sent");
    assert!(stdout(&out).starts_with("{\n  \"type\": \"object\",\n  \"properties\""));

    // A file, compact as written: re-indented, keys in the author's order.
    let file = write(
        &w.work(),
        "z.json",
        r#"{"type":"object","required":[],"properties":{}}"#,
    );
    let out = w
        .cmd()
        .args(["schema", "show", "./z.json"])
        .output()
        .unwrap();
    assert_eq!(
        stdout(&out),
        "{\n  \"type\": \"object\",\n  \"required\": [],\n  \"properties\": {}\n}\n"
    );
    assert!(file.exists());

    let out = w.cmd().args(["schema", "show", "verdit"]).output().unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(stdout(&out).is_empty());
    assert!(
        stderr(&out).starts_with(
            "oneshot: error: failed to find schema `verdit`: no such label (known: verdict, \
             branch-suggest, nudgenik, conflict-resolve)"
        ),
        "{}",
        stderr(&out)
    );
    let out = w
        .cmd()
        .args(["schema", "show", "missing.json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        stderr(&out).starts_with("oneshot: error: failed to read schema missing.json: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn check_passes_the_builtins() {
    let w = World::new();
    let out = w.cmd().args(["schema", "check"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        stdout(&out),
        "verdict: ok\nbranch-suggest: ok\nnudgenik: ok\nconflict-resolve: ok\n\
         4 schema(s) checked: 0 error(s), 0 warning(s)\n"
    );
}

#[test]
fn check_reports_each_problem_with_its_file_and_pointer() {
    let w = World::new();
    let reg = w.tmp.path().join("registry");
    let broken = write(&reg, "broken.json", BROKEN);
    let notjson = write(&reg, "notjson.json", "{\"type\": ");
    let shadow = write(&reg, "verdict.json", TRIAGE);
    write(&reg, "triage.json", TRIAGE);
    let expected = format!(
        "verdict: ok\nbranch-suggest: ok\nnudgenik: ok\nconflict-resolve: ok\n\
         {b}: /required/1: required key \"b\" is not in properties\n\
         {b}: /additionalProperties: warning: strict mode: every object needs \
         \"additionalProperties\": false\n\
         {n}: /: not JSON: EOF while parsing a value at line 1 column 9\n\
         {reg}/triage.json: ok\n\
         {s}: /: not used: a built-in schema is labelled \"verdict\" and built-ins are not \
         replaced; rename the file\n\
         8 schema(s) checked: 3 error(s), 1 warning(s)\n",
        b = broken.display(),
        n = notjson.display(),
        s = shadow.display(),
        reg = reg.display(),
    );
    // The same from --registry and from the environment.
    let by_flag = w
        .cmd()
        .args(["schema", "check", "--registry"])
        .arg(&reg)
        .output()
        .unwrap();
    let by_env = w
        .cmd()
        .args(["schema", "check"])
        .env("ONESHOT_SCHEMAS", &reg)
        .output()
        .unwrap();
    for out in [by_flag, by_env] {
        assert_eq!(code(&out), 1, "{}", text(&out));
        assert_eq!(stdout(&out), expected);
    }

    // The shadowing file is not used: `list` says so and the label means the built-in.
    let out = w
        .cmd()
        .args(["schema", "list", "--registry"])
        .arg(&reg)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        stderr(&out).contains(&format!(
            "oneshot: warning: schema file {} is not used: a built-in schema is labelled \
             \"verdict\"",
            shadow.display()
        )),
        "{}",
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("\nverdict           builtin"),
        "{}",
        stdout(&out)
    );

    // Named ones only, by label and by path; --json.
    let out = w
        .cmd()
        .args([
            "schema",
            "check",
            "broken",
            "./registry/triage.json",
            "--json",
        ])
        .env("ONESHOT_SCHEMAS", &reg)
        .current_dir(w.tmp.path())
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", text(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["errors"], 1);
    assert_eq!(report["warnings"], 1);
    assert_eq!(report["schemas"][0]["name"], "broken");
    assert_eq!(report["schemas"][0]["origin"], "user");
    assert_eq!(
        report["schemas"][0]["problems"][0],
        serde_json::json!({
            "pointer": "/required/1",
            "severity": "error",
            "message": "required key \"b\" is not in properties"
        })
    );
    assert_eq!(report["schemas"][1]["origin"], "file");
    assert_eq!(report["schemas"][1]["problems"], serde_json::json!([]));
}

#[test]
fn strict_makes_warnings_fail() {
    let w = World::new();
    let loose = write(&w.work(), "loose.json", LOOSE);
    let line = format!(
        "{}: /properties/note: warning: strict mode: property \"note\" must be listed in \
         required",
        loose.file_name().unwrap().to_str().unwrap()
    );
    let out = w
        .cmd()
        .args(["schema", "check", "loose.json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(stdout(&out).starts_with(&line), "{}", stdout(&out));
    let out = w
        .cmd()
        .args(["schema", "check", "--strict", "loose.json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(
        stdout(&out).ends_with("1 schema(s) checked: 0 error(s), 1 warning(s) (--strict)\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn check_of_something_that_is_not_there_is_a_usage_error() {
    let w = World::new();
    for spec in ["nope", "nope.json"] {
        let out = w.cmd().args(["schema", "check", spec]).output().unwrap();
        assert_eq!(code(&out), 2, "{spec}: {}", text(&out));
        assert!(stdout(&out).is_empty());
    }
}
