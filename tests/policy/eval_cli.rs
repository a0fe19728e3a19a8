//! `oneshot eval` through the real binary with command targets (a real agent CLI against the
//! fake model server: tests/agents/ask.rs): the shipped example passes, a target right two
//! times in three fails pass^k, `--update` writes golden files only from agreeing answers,
//! manifest errors name the file, line and case, and `--parallel` runs cases at once.

use crate::common;
use common::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// A nudgenik answer in this state.
fn answer(state: &str) -> String {
    format!(
        r#"{{"state": "{state}", "confidence": 0.9, "evidence": ["x"], "summary": "{state}."}}"#
    )
}

fn eval(w: &World, args: &[&str]) -> std::process::Output {
    w.cmd().arg("eval").args(args).output().unwrap()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/eval")
}

#[test]
fn the_shipped_example_passes() {
    let w = World::new();
    let manifest = example().join("manifest.yaml");
    let manifest = manifest.to_str().unwrap();
    // Its own target (classify.sh beside it, run in its directory) …
    let out = eval(&w, &[manifest]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let table = stdout(&out);
    assert!(table.starts_with("FILE"), "{table}");
    assert!(table.contains("Completed x3"), "{table}");
    assert!(table.contains("Needs Authorization x3"), "{table}");
    assert!(table.ends_with("4 passed, 0 failed\n"), "{table}");
    // … and the same script named on the command line, run from here.
    let cmd = format!("sh {}", example().join("classify.sh").display());
    let out = eval(&w, &[manifest, "--target-cmd", &cmd, "--k", "2"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(stdout(&out).contains("Completed x2"), "{}", stdout(&out));
}

#[test]
fn a_target_wrong_one_time_in_three_fails() {
    let w = World::new();
    // Every third call says Waiting; the runs of a case are one after another.
    let flaky = w.script(
        "flaky.sh",
        &format!(
            "cat > /dev/null; n=$(ls {d} | grep -c '^call'); touch {d}/call$n; \
             if [ $n = 2 ]; then echo '{}'; else echo '{}'; fi",
            answer("Waiting"),
            answer("Completed"),
            d = w.tmp.path().display()
        ),
    );
    let m = w.file(
        "m.yaml",
        "schema: nudgenik\ncases:\n  - id: done\n    prompt: what now?\n    want: Completed\n",
    );
    let out = eval(
        &w,
        &[m.to_str().unwrap(), "--target-cmd", &flaky, "--k", "3"],
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    let table = stdout(&out);
    assert!(table.contains("Completed x2, Waiting x1"), "{table}");
    assert!(table.contains("FAIL"), "{table}");
    assert!(table.ends_with("0 passed, 1 failed\n"), "{table}");
}

#[test]
fn update_writes_golden_files_only_from_agreeing_answers() {
    let w = World::new();
    let m = w.file(
        "m.yaml",
        "schema: nudgenik\ncases:\n  - id: g\n    prompt: what now?\n    golden: g.want.json\n",
    );
    let m = m.to_str().unwrap();
    let golden = w.tmp.path().join("g.want.json");
    let steady = w.script(
        "steady.sh",
        &format!("cat > /dev/null; echo '{}'", answer("Error")),
    );

    // Not written yet: a manifest error, exit 2, nothing ran.
    let out = eval(&w, &[m, "--target-cmd", &steady]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("case \"g\""), "{}", text(&out));
    assert!(text(&out).contains("--update"), "{}", text(&out));

    let out = eval(&w, &[m, "--target-cmd", &steady, "--update"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(stdout(&out).contains("PASS (updated)"), "{}", stdout(&out));
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&golden).unwrap()).unwrap();
    assert_eq!(written["state"], "Error");
    let out = eval(&w, &[m, "--target-cmd", &steady]);
    assert_eq!(code(&out), 0, "{}", text(&out));

    // Answers that disagree write nothing, and the case fails.
    std::fs::remove_file(&golden).unwrap();
    let wobbly = w.script(
        "wobbly.sh",
        &format!(
            "cat > /dev/null; n=$(ls {d} | grep -c '^call'); touch {d}/call$n; \
             if [ $n = 1 ]; then echo '{}'; else echo '{}'; fi",
            answer("Waiting"),
            answer("Error"),
            d = w.tmp.path().display()
        ),
    );
    let out = eval(&w, &[m, "--target-cmd", &wobbly, "--update"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(!golden.exists());
}

#[test]
fn json_prints_one_object() {
    let w = World::new();
    let t = w.script(
        "t.sh",
        &format!("cat > /dev/null; echo '{}'", answer("Completed")),
    );
    let m = w.file(
        "m.yaml",
        "schema: nudgenik\nk: 2\ncases:\n  - id: a\n    prompt: p\n    want: {state: Completed}\n  \
         - id: b\n    prompt: p\n    want: Waiting\n",
    );
    let out = eval(&w, &[m.to_str().unwrap(), "--target-cmd", &t, "--json"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["k"].as_u64(), v["passed"].as_u64(), v["failed"].as_u64()),
        (Some(2), Some(1), Some(1))
    );
    let b = &v["cases"][1];
    assert_eq!(b["case_id"], "b");
    assert_eq!(b["status"], "fail");
    assert_eq!(b["want"], "Waiting");
    assert_eq!(b["expected"], serde_json::json!({"state": "Waiting"}));
    assert_eq!(
        b["got"],
        serde_json::json!([{"answer": "Completed", "count": 2}])
    );
    assert_eq!(b["runs"][0]["pass"], false);
    assert_eq!(b["runs"][0]["answer"]["state"], "Completed");
}

#[test]
fn manifest_errors_name_the_file_the_line_and_the_case() {
    let w = World::new();
    let t = w.script(
        "t.sh",
        &format!("cat > /dev/null; echo '{}'", answer("Completed")),
    );
    let m = w.file(
        "m.yaml",
        "schema: nudgenik\ncases:\n  - id: a\n    prompt: p\n    want: Completed\n  - id: b\n    prompt: p\n    wnat: Completed\n",
    );
    let out = eval(&w, &[m.to_str().unwrap(), "--target-cmd", &t]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("m.yaml:8: case \"b\": unknown field `wnat`"),
        "{}",
        text(&out)
    );
    assert!(out.stdout.is_empty());

    let m = w.file(
        "m2.yaml",
        "schema: nudgenik\ncases:\n  - id: cap\n    input: nowhere.txt\n    want: Completed\n",
    );
    let out = eval(&w, &[m.to_str().unwrap(), "--target-cmd", &t]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("m2.yaml:3: case \"cap\": could not read the input"),
        "{}",
        text(&out)
    );

    // A value the schema cannot have a field for, and no target at all.
    let m = w.file(
        "m3.yaml",
        "cases:\n  - id: x\n    prompt: p\n    schema: branch-suggest\n    want: main\n",
    );
    let out = eval(&w, &[m.to_str().unwrap(), "--target-cmd", &t]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("case \"x\""), "{}", text(&out));
    let m = w.file(
        "m4.yaml",
        "schema: nudgenik\ncases:\n  - id: a\n    prompt: p\n    want: Completed\n",
    );
    let out = eval(&w, &[m.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("no target"), "{}", text(&out));
}

#[test]
fn parallel_runs_cases_at_once() {
    let w = World::new();
    let slow = w.script(
        "slow.sh",
        &format!("cat > /dev/null; sleep 1; echo '{}'", answer("Completed")),
    );
    let mut yaml = String::from("schema: nudgenik\nk: 1\ncases:\n");
    for i in 0..4 {
        yaml.push_str(&format!(
            "  - id: c{i}\n    prompt: p\n    want: Completed\n"
        ));
    }
    let m = w.file("m.yaml", &yaml);
    let started = Instant::now();
    let out = eval(
        &w,
        &[
            m.to_str().unwrap(),
            "--target-cmd",
            &slow,
            "--parallel",
            "4",
        ],
    );
    let took = started.elapsed();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        took < Duration::from_millis(2500),
        "4 cases of 1 s took {took:?}"
    );
    // The table keeps the manifest's order whatever finished first.
    let table = stdout(&out);
    let ids: Vec<&str> = table
        .lines()
        .skip(1)
        .take(4)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids, ["c0", "c1", "c2", "c3"]);
}

/// A manifest's `target:` may name a `[targets.NAME]` of oneshot.toml: it runs with that
/// table's command and environment (its secret from oneshot's), in the manifest's directory.
#[test]
fn a_manifest_may_name_a_target_of_oneshot_toml() {
    let w = World::new();
    let dir = w.work().join("evals");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("say.sh"), "cat > /dev/null; echo \"{\\\"state\\\": \\\"$SAY\\\", \\\"confidence\\\": 1, \\\"evidence\\\": [], \\\"summary\\\": \\\"s\\\"}\"").unwrap();
    std::fs::write(
        dir.join("m.yaml"),
        "schema: nudgenik\ntarget: sayer\nk: 2\ncases:\n  - id: one\n    prompt: what state?\n    want: Waiting\n",
    )
    .unwrap();
    std::fs::write(
        w.work().join("oneshot.toml"),
        "[targets.sayer]\ncmd = \"sh say.sh\"\nenv = { SAY = \"$ZQ_SAY\" }\n",
    )
    .unwrap();
    let out = w
        .cmd()
        .args(["eval", "evals/m.yaml"])
        .env("ZQ_SAY", "Waiting")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(stdout(&out).contains("Waiting x2"), "{}", text(&out));
}
