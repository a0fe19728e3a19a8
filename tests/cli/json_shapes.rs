//! Every `--json` output parses as the shape docs/json.md documents for it: NDJSON for lists
//! and streams, one object otherwise, with exactly the documented fields and types.

use crate::common;
use crate::job_env;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;

/// One documented table: field name → type as written (`string`, `integer or null`, `object?`).
type Shape = BTreeMap<String, String>;

/// The tables of docs/json.md under each `## \`oneshot …\`` heading, in order.
fn documented() -> BTreeMap<String, Vec<Shape>> {
    let doc = include_str!("../../docs/json.md");
    let mut sections: BTreeMap<String, Vec<Shape>> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_table = false;
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## `") {
            current = Some(h.trim_end_matches('`').to_string());
            in_table = false;
            continue;
        }
        let Some(section) = &current else { continue };
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || !line.starts_with('|') {
            in_table = false;
            continue;
        }
        if cells[1] == "field" || cells[1].starts_with("---") {
            continue;
        }
        if !in_table {
            sections
                .entry(section.clone())
                .or_default()
                .push(Shape::new());
            in_table = true;
        }
        let field = cells[1].trim_matches('`').to_string();
        let shapes = sections.get_mut(section).unwrap();
        shapes
            .last_mut()
            .unwrap()
            .insert(field, cells[2].to_string());
    }
    sections
}

fn shape(doc: &BTreeMap<String, Vec<Shape>>, heading: &str, n: usize) -> Shape {
    doc.get(heading)
        .unwrap_or_else(|| panic!("docs/json.md has no section `{heading}`"))[n]
        .clone()
}

/// Whether `v` is of the documented type `ty`.
fn is(ty: &str, v: &Value) -> bool {
    let ty = ty.trim_end_matches('?');
    ty.split(" or ").any(|t| match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        other => panic!("docs/json.md: unknown type `{other}`"),
    })
}

/// `v` has every documented field (the optional ones when present) with its type, and no
/// other.
fn conforms(what: &str, shape: &Shape, v: &Value) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object: {v}"));
    for (field, ty) in shape {
        match obj.get(field) {
            Some(x) => assert!(is(ty, x), "{what}: `{field}` is not {ty}: {x}"),
            None => assert!(ty.ends_with('?'), "{what}: `{field}` is missing: {v}"),
        }
    }
    for key in obj.keys() {
        assert!(shape.contains_key(key), "{what}: `{key}` is not documented");
    }
}

/// Runs oneshot, expecting exit 0; returns stdout.
fn json_out(w: &World, args: &[&str]) -> String {
    let out = w.cmd().args(args).output().unwrap();
    assert_eq!(code(&out), 0, "{args:?}: {}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// One JSON document: the whole of stdout.
fn one_object(w: &World, args: &[&str]) -> Value {
    let text = json_out(w, args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}\n{text}"))
}

/// NDJSON: every line one object.
fn ndjson(w: &World, args: &[&str]) -> Vec<Value> {
    json_out(w, args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{args:?}: {e}\n{l}")))
        .collect()
}

#[test]
fn every_json_output_is_its_documented_shape() {
    let doc = documented();
    let w = World::new();
    let once = w.tmp.path().join("audited");
    let worker = w.script("w.sh", "echo line >> f.txt");
    let auditor = w.script(
        "a.sh",
        &format!(
            "if [ -f {o} ]; then echo 'VERDICT: DONE good'; else touch {o}; \
             echo 'VERDICT: RETRY again'; fi",
            o = once.display()
        ),
    );
    let out = w.run(&worker, &auditor, &[], "a task\nwith two lines");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();

    let rows = ndjson(&w, &["list", "--json"]);
    assert_eq!(rows.len(), 1);
    conforms(
        "list --json",
        &shape(&doc, "oneshot list --json", 0),
        &rows[0],
    );

    let status = one_object(&w, &["status", &id, "--json"]);
    conforms(
        "status --json",
        &shape(&doc, "oneshot status [ID] --json", 0),
        &status,
    );
    assert_eq!(status["state"], "COMPLETED");
    assert_eq!(status["liveness"], "ended");

    let records = ndjson(&w, &["log", &id, "--json"]);
    assert_eq!(
        records.len(),
        w.log(&id).len(),
        "every record, blobs included"
    );
    let log_shape = shape(&doc, "oneshot log ID --json", 0);
    for r in &records {
        let t = r["type"].as_str().unwrap_or_else(|| panic!("no type: {r}"));
        assert!(is(&log_shape["type"], &r["type"]), "{r}");
        assert!(!t.is_empty());
    }

    let policy = w.policy(
        r#"return {
             verdict = function(ctx) return "retry", "never done" end,
             tests = { { name = "retries", hook = "verdict", input = { output = "x" },
                         expect = "retry" } },
           }"#,
    );
    let check = one_object(&w, &["policy", "check", &policy, "--json"]);
    conforms(
        "policy check --json",
        &shape(&doc, "oneshot policy check FILE --json", 0),
        &check,
    );
    let tests = one_object(&w, &["policy", "test", &policy, "--json"]);
    conforms(
        "policy test --json",
        &shape(&doc, "oneshot policy test FILE --json", 0),
        &tests,
    );
    assert_eq!(tests["passed"], 1, "{tests}");
    let replay = one_object(
        &w,
        &["policy", "replay", &id, "--policy", &policy, "--json"],
    );
    conforms(
        "policy replay --json",
        &shape(&doc, "oneshot policy replay ID --policy FILE --json", 0),
        &replay,
    );
    assert!(
        !replay["differences"].as_array().unwrap().is_empty(),
        "{replay}"
    );

    // An unreadable session in the list: the documented error shape.
    std::fs::write(w.session_dir(&id).join("oneshot.json"), "{\"schema\": 2, ").unwrap();
    let rows = ndjson(&w, &["list", "--json"]);
    conforms(
        "list --json (unreadable)",
        &shape(&doc, "oneshot list --json", 1),
        &rows[0],
    );

    // A runner's stream: one job through to APPROVAL_REQUIRED.
    let repo = job_env::repo(w.tmp.path());
    let job = w
        .cmd()
        .current_dir(&repo)
        .args(["job", "create", "--worker-cmd", "sh -c 'echo hi > f.txt'"])
        .args(["--auditor-cmd", "echo VERDICT: DONE", "--activate", "a job"])
        .output()
        .unwrap();
    assert_eq!(code(&job), 0, "{}", text(&job));
    let rows = ndjson(&w, &["job", "list", "--json"]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    conforms(
        "job list --json",
        &shape(&doc, "oneshot job list --json", 0),
        &rows[0],
    );
    let events = ndjson(&w, &["job", "run", "--json"]);
    let job_id = rows[0]["job_id"].as_str().unwrap().to_string();
    let shown = one_object(&w, &["job", "show", &job_id, "--json"]);
    conforms(
        "job show --json",
        &shape(&doc, "oneshot job show ID --json", 0),
        &shown,
    );
    let history = shown["history"].as_array().unwrap();
    assert_eq!(
        history.last().unwrap()["trigger"],
        "harvested: approval required",
        "{shown}"
    );
    for entry in ndjson(&w, &["job", "audit", &job_id, "--json"]) {
        conforms(
            "job audit --json",
            &shape(&doc, "oneshot job audit [ID] --json", 0),
            &entry,
        );
    }
    let replay = one_object(&w, &["job", "replay", &job_id, "--json"]);
    conforms(
        "job replay --json",
        &shape(&doc, "oneshot job replay ID --json", 0),
        &replay,
    );
    assert_eq!(replay["verdict"], "same", "{replay}");
    let section = "oneshot job run --json";
    for e in &events {
        let n = match e["type"].as_str() {
            Some("job_transition") => 0,
            Some("step_end") => 1,
            Some("summary") => 2,
            Some("session_transition") => 3,
            Some("warning") => 4,
            other => panic!("job run --json: an undocumented event {other:?}: {e}"),
        };
        conforms("job run --json", &shape(&doc, section, n), e);
    }
    assert_eq!(events.last().unwrap()["type"], "summary", "{events:?}");
    assert_eq!(events.last().unwrap()["rested"]["APPROVAL_REQUIRED"], 1);
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "job_transition")
            .count(),
        4,
        "{events:?}"
    );
    let session: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "session_transition")
        .collect();
    assert_eq!(
        session.last().map(|e| e["to"].clone()),
        Some(Value::from("COMPLETED")),
        "{events:?}"
    );
}

#[test]
fn status_json_reads_the_state_like_status_does() {
    let w = World::new();
    let worker = w.script("w.sh", "echo line >> f.txt");
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = w.run(&worker, &auditor, &[], "the task");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    let state = w.session_dir(&id).join("oneshot.json");
    let good = std::fs::read_to_string(&state).unwrap();

    // Rewritten outside oneshot (still valid JSON): refused, as resume refuses it.
    std::fs::write(&state, good.replace("the task", "another task")).unwrap();
    for args in [&["status", &id][..], &["status", &id, "--json"]] {
        let out = w.cmd().args(args).output().unwrap();
        assert_eq!(code(&out), 4, "{args:?}: {}", text(&out));
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        // The seal's complaint once, then what to do.
        assert_eq!(
            err,
            format!(
                "oneshot: error: failed to trust state file {}: its seal does not match: it was \
                 changed outside oneshot, or by another user; nothing was changed — an agent may \
                 have rewritten it: check the workdir and start a new session\n",
                state.display()
            )
        );
    }

    // Corrupt: an error naming the file and what to do, nothing printed as the session.
    std::fs::write(&state, &good[..good.len() / 2]).unwrap();
    for args in [&["status", &id][..], &["status", &id, "--json"]] {
        let out = w.cmd().args(args).output().unwrap();
        assert_eq!(code(&out), 1, "{args:?}: {}", text(&out));
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!(
                "oneshot: error: failed to read state file {}: it is corrupt (",
                state.display()
            )) && err.contains("inspect or restore it"),
            "{err}"
        );
    }
}

#[test]
fn policy_test_without_tests_fails_and_says_where_it_looked() {
    let w = World::new();
    let policy = w.policy(r#"return { verdict = function(ctx) return "done" end }"#);
    let beside = w.tmp.path().join("p_test.lua");
    for (json, found) in [
        (false, "does not exist"),
        (true, "exists but defines no tests"),
    ] {
        if json {
            std::fs::write(&beside, "return {}").unwrap();
        }
        let mut cmd = w.cmd();
        cmd.args(["policy", "test", &policy]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert_eq!(code(&out), 1, "{}", text(&out));
        assert!(out.stdout.is_empty(), "{}", text(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "oneshot: error: failed to test policy {policy}: it has no tests; looked in {} \
                 (which {found}) and in the policy's `tests` table (absent or empty) — add a \
                 case to either (see docs/policy.md)\n",
                beside.display()
            )
        );
    }
}

#[test]
fn schema_json_outputs_are_their_documented_shapes() {
    let doc = documented();
    let w = World::new();
    let registry = w.tmp.path().join("schemas");
    std::fs::create_dir_all(&registry).unwrap();
    // Strict mode warns (`note` is not required); everything else accepts it: exit 0.
    std::fs::write(
        registry.join("loose.json"),
        r#"{"type": "object", "description": "a note", "properties": {"note": {"type": "string"}},
            "required": [], "additionalProperties": false}"#,
    )
    .unwrap();
    let registry = registry.to_str().unwrap();

    let rows = ndjson(&w, &["schema", "list", "--json", "--registry", registry]);
    assert_eq!(rows.len(), 5);
    let list = shape(&doc, "oneshot schema list --json", 0);
    for row in &rows {
        conforms("schema list --json", &list, row);
    }

    let report = one_object(&w, &["schema", "check", "--json", "--registry", registry]);
    conforms(
        "schema check --json",
        &shape(&doc, "oneshot schema check [LABEL|FILE…] --json", 0),
        &report,
    );
    assert_eq!(report["warnings"], 1);
    let schemas = report["schemas"].as_array().unwrap();
    assert_eq!(schemas.len(), 5);
    for s in schemas {
        let keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "origin", "path", "problems"], "{s}");
    }
    let problem = &schemas[4]["problems"][0];
    let keys: Vec<&str> = problem
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["message", "pointer", "severity"], "{problem}");
}

#[test]
fn eval_json_is_its_documented_shape() {
    let doc = documented();
    let w = World::new();
    let ok = r#"{"state": "Completed", "confidence": 1, "evidence": [], "summary": "done"}"#;
    let t = w.script("t.sh", &format!("cat > /dev/null; echo '{ok}'"));
    w.file("g.want.json", ok);
    let m = w.file(
        "m.yaml",
        "schema: nudgenik\nk: 1\ncases:\n  - id: a\n    prompt: p\n    want: Completed\n  \
         - id: g\n    prompt: p\n    golden: g.want.json\n",
    );
    let report = one_object(
        &w,
        &["eval", m.to_str().unwrap(), "--target-cmd", &t, "--json"],
    );
    let heading = "oneshot eval MANIFEST --json";
    conforms("eval --json", &shape(&doc, heading, 0), &report);
    for case in report["cases"].as_array().unwrap() {
        conforms("eval --json case", &shape(&doc, heading, 1), case);
        for run in case["runs"].as_array().unwrap() {
            conforms("eval --json run", &shape(&doc, heading, 2), run);
        }
    }
}
