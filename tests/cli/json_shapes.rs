//! Every `--json` output parses as the shape docs/json.md documents for it: NDJSON for lists
//! and streams, one object otherwise, with exactly the documented fields and types.

use crate::common;
use crate::job_env;
use crate::json_doc::{JSON_MD, RUN_JSON_MD, conforms, is, rows, shape};
use common::*;
use serde_json::Value;

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
    let out = w.run(&worker, &auditor, &["--json"], "a task\nwith two lines");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();

    // `run --json`, as docs/run-json.md has it: each line its section's fields and a `type`.
    let stream = String::from_utf8(out.stdout).unwrap();
    for line in stream.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let kind = v["type"].as_str().unwrap_or_else(|| panic!("no type: {v}"));
        if kind == "warning" || kind == "note" {
            let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["at", "message", "type"], "{v}");
            continue;
        }
        let mut documented = shape(RUN_JSON_MD, kind, 0);
        documented.insert("type".into(), "string".into());
        conforms(&format!("run --json {kind}"), &documented, &v);
        assert_eq!(v["session_id"], id.as_str(), "{v}");
    }
    assert!(stream.lines().count() > 2, "{stream}");

    let rows = ndjson(&w, &["list", "--json"]);
    assert_eq!(rows.len(), 1);
    conforms(
        "list --json",
        &shape(JSON_MD, "oneshot list --json", 0),
        &rows[0],
    );

    let status = one_object(&w, &["status", &id, "--json"]);
    conforms(
        "status --json",
        &shape(JSON_MD, "oneshot status [ID] --json", 0),
        &status,
    );
    assert_eq!(status["state"], "COMPLETED");
    assert_eq!(status["liveness"], "ended");
    assert_eq!(status["session_id"], id.as_str());

    let shown = one_object(&w, &["show", &id, "--json"]);
    conforms(
        "show --json",
        &shape(JSON_MD, "oneshot show [ID] --json", 0),
        &shown,
    );
    assert_eq!(shown["iterations"].as_array().unwrap().len(), 2, "{shown}");

    let records = ndjson(&w, &["log", &id, "--json"]);
    assert_eq!(
        records.len(),
        w.log(&id).len(),
        "every record, blobs included"
    );
    let log_shape = shape(JSON_MD, "oneshot log ID --json", 0);
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
        &shape(JSON_MD, "oneshot policy check FILE --json", 0),
        &check,
    );
    let tests = one_object(&w, &["policy", "test", &policy, "--json"]);
    conforms(
        "policy test --json",
        &shape(JSON_MD, "oneshot policy test FILE --json", 0),
        &tests,
    );
    assert_eq!(tests["passed"], 1, "{tests}");
    let replay = one_object(
        &w,
        &["policy", "replay", &id, "--policy", &policy, "--json"],
    );
    conforms(
        "policy replay --json",
        &shape(JSON_MD, "oneshot policy replay ID --policy FILE --json", 0),
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
        &shape(JSON_MD, "oneshot list --json", 1),
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
        &shape(JSON_MD, "oneshot job list --json", 0),
        &rows[0],
    );
    let events = ndjson(&w, &["job", "run", "--json"]);
    let job_id = rows[0]["job_id"].as_str().unwrap().to_string();
    let shown = one_object(&w, &["job", "show", &job_id, "--json"]);
    conforms(
        "job show --json",
        &shape(JSON_MD, "oneshot job show ID --json", 0),
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
            &shape(JSON_MD, "oneshot job audit [ID] --json", 0),
            &entry,
        );
    }
    let replay = one_object(&w, &["job", "replay", &job_id, "--json"]);
    conforms(
        "job replay --json",
        &shape(JSON_MD, "oneshot job replay ID --json", 0),
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
        conforms("job run --json", &shape(JSON_MD, section, n), e);
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
    let records = ndjson(&w, &["job", "log", &job_id, "--json"]);
    assert!(!records.is_empty());
    for r in &records {
        conforms(
            "job log --json",
            &shape(JSON_MD, "oneshot job log ID --json", 0),
            r,
        );
        assert_eq!(r["session_id"], shown["sessions"][0]["session_id"], "{r}");
    }

    let made = w
        .cmd()
        .args(["token", "create", "--name", "ci", "--scope", "read"])
        .output()
        .unwrap();
    assert_eq!(code(&made), 0, "{}", text(&made));
    let tokens = ndjson(&w, &["token", "list", "--json"]);
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    conforms(
        "token list --json",
        &shape(JSON_MD, "oneshot token list --json", 0),
        &tokens[0],
    );
}

/// The ids the outputs name, each for what it is (docs/json.md, "One vocabulary").
const IDS: [&str; 6] = [
    "session_id",
    "job_id",
    "runner_id",
    "case_id",
    "message_id",
    "entity_id",
];

/// One name for one concept across every `--json` (docs/json.md, "One vocabulary"), read off
/// the documented tables — which `every_json_output_is_its_documented_shape` and the other
/// tests here hold the real output to: an id is named for what it is, from one list; the whole
/// task is `task` and its first line `title`; a session's counter is `iteration_count`; a time is
/// `at`, `*_at` or `*_ms`.
#[test]
fn every_json_output_speaks_one_vocabulary() {
    let all: Vec<_> = rows(JSON_MD).into_iter().chain(rows(RUN_JSON_MD)).collect();
    let mut named: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for r in &all {
        let at = format!("`{}`: `{}` ({}: {})", r.section, r.field, r.ty, r.meaning);
        let f = r.field.as_str();
        let string =
            r.ty.trim_end_matches('?')
                .split(" or ")
                .any(|t| t == "string");
        assert!(
            f != "id" && f != "oneshot_id",
            "{at}: name the id for what it is"
        );
        assert!(
            !(string && ["session", "job", "runner"].contains(&f)),
            "{at}: an id is `{f}_id`"
        );
        if f.ends_with("_id") {
            assert!(IDS.contains(&f), "{at}: not one of the ids {IDS:?}");
            named.entry(f).or_default().push(&r.section);
        }
        if r.meaning.starts_with("when") {
            assert!(
                f == "at" || f.ends_with("_at") || f.ends_with("_ms"),
                "{at}: a time is `at`, `*_at` or `*_ms`"
            );
        }
        if f == "at" || f.ends_with("_at") {
            assert!(string, "{at}: `*_at` is RFC 3339, a string");
        }
        if f.ends_with("_ms") {
            assert!(
                r.ty.starts_with("integer") || r.ty.starts_with("number"),
                "{at}: `*_ms` is milliseconds"
            );
        }
        match f {
            "task" => assert!(
                r.meaning.contains("whole"),
                "{at}: `task` is the whole task"
            ),
            "title" => assert!(
                r.meaning.contains("first"),
                "{at}: `title` is its first line"
            ),
            "iterations" => assert!(r.ty == "array", "{at}: a count is `iteration_count`"),
            "iteration_count" => assert!(!r.ty.contains("array"), "{at}"),
            _ => {}
        }
    }
    // The rules read real tables: the ids are where the outputs are.
    assert!(named["session_id"].len() >= 6, "{named:?}");
    assert!(named["job_id"].len() >= 6, "{named:?}");
    for section in [
        "session",
        "transition",
        "outcome",
        "oneshot status [ID] --json",
    ] {
        assert!(
            named["session_id"].contains(&section),
            "{section}: {named:?}"
        );
    }
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
    let list = shape(JSON_MD, "oneshot schema list --json", 0);
    for row in &rows {
        conforms("schema list --json", &list, row);
    }

    let report = one_object(&w, &["schema", "check", "--json", "--registry", registry]);
    conforms(
        "schema check --json",
        &shape(JSON_MD, "oneshot schema check [LABEL|FILE…] --json", 0),
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
    conforms("eval --json", &shape(JSON_MD, heading, 0), &report);
    for case in report["cases"].as_array().unwrap() {
        conforms("eval --json case", &shape(JSON_MD, heading, 1), case);
        for run in case["runs"].as_array().unwrap() {
            conforms("eval --json run", &shape(JSON_MD, heading, 2), run);
        }
    }
}
