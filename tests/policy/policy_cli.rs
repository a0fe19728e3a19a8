//! `oneshot policy check|test|stubs|trust|replay` through the real binary.

use crate::common;
use common::*;

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn check_lists_hooks_and_limits_and_fails_with_file_line() {
    let w = World::new();
    let strict = root().join("policies/strict.lua");
    let out = w
        .cmd()
        .args(["policy", "check"])
        .arg(&strict)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("verdict") && s.contains("max_iterations"), "{s}");

    let json = w
        .cmd()
        .args(["policy", "check", "--json"])
        .arg(&strict)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v["hash"].as_str().unwrap().starts_with("sha256:"), "{v}");

    let bad = w.file(
        "bad.lua",
        "return {\n  limits = { max_iteratons = 3 },\n}\n",
    );
    let out = w
        .cmd()
        .args(["policy", "check"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.lua:2"), "{err}");
}

#[test]
fn test_runs_cases_and_prints_the_summary_line() {
    let w = World::new();
    for name in ["default", "strict", "lenient", "auto-approve"] {
        let file = root().join(format!("policies/{name}.lua"));
        let out = w
            .cmd()
            .args(["policy", "test"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{name}: {}", text(&out));
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(s.lines().last().unwrap().ends_with(" 0 failed"), "{s}");
    }
    let p = w.file(
        "p.lua",
        r#"return {
  verdict = function(o) return "retry" end,
  tests = {
    { name = "always retry", hook = "verdict", input = { output = "VERDICT: DONE" }, expect = "retry" },
    { name = "wrong on purpose", hook = "verdict", input = { output = "x" }, expect = "done" },
  },
}"#,
    );
    let out = w.cmd().args(["policy", "test"]).arg(&p).output().unwrap();
    assert_eq!(code(&out), 1, "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("1 passed, 1 failed"), "{s}");
    assert!(s.contains("wrong on purpose"), "{s}");
}

#[test]
fn stubs_are_written_and_match_the_shipped_ones() {
    let w = World::new();
    let dir = w.tmp.path().join("stubs");
    let out = w
        .cmd()
        .args(["policy", "stubs", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    for name in ["oneshot.d.lua", "oneshot.d.luau"] {
        let written = std::fs::read_to_string(dir.join(name)).unwrap();
        let shipped = std::fs::read_to_string(root().join("policies").join(name)).unwrap();
        assert_eq!(written, shipped, "{name}");
    }
}

#[test]
fn trust_records_the_hash_in_the_trust_file() {
    let w = World::new();
    let trust_file = w.private.path().join("trust.json");
    let p = w.file("p.lua", "return {}");
    let out = w
        .cmd()
        .env("ONESHOT_TRUST_FILE", &trust_file)
        .args(["policy", "trust"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trust_file).unwrap()).unwrap();
    let canonical = p.canonicalize().unwrap();
    assert!(
        v["files"][canonical.to_str().unwrap()]
            .as_str()
            .unwrap()
            .starts_with("sha256:"),
        "{v}"
    );
}

#[test]
fn replay_shows_where_another_policy_decides_differently() {
    let w = World::new();
    // Recorded: the auditor asks for one retry, then is satisfied.
    let worker = w.script(
        "w.sh",
        "case \"$ONESHOT_PROMPT\" in *CRITIQUE*) echo v2 > out;; *) echo v1 > out;; esac",
    );
    let auditor = w.script(
        "a.sh",
        "if grep -q v2 out; then echo 'VERDICT: DONE'; else echo 'VERDICT: RETRY needs v2'; fi",
    );
    let out = w.run(&worker, &auditor, &["-q"], "t");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();

    // Same behaviour: no differences.
    let same = w.file("same.lua", "return {}");
    let r = w
        .cmd()
        .args(["policy", "replay", &id, "--policy"])
        .arg(&same)
        .args(["--json"])
        .output()
        .unwrap();
    assert_eq!(code(&r), 0, "{}", text(&r));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["differences"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(v["verdict"], "same", "{v}");

    // A lenient verdict accepts the first attempt: the path ends COMPLETED one iteration early.
    let lenient = w.file(
        "lenient.lua",
        "return { verdict = function(o, ctx) return 'done', 'anything goes' end }",
    );
    let r = w
        .cmd()
        .args(["policy", "replay", &id, "--policy"])
        .arg(&lenient)
        .args(["--json"])
        .output()
        .unwrap();
    assert_eq!(code(&r), 0, "{}", text(&r));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let diffs = v["differences"].as_array().unwrap();
    // The retry became a done; the done got another reason.
    assert_eq!(diffs.len(), 2, "{v}");
    assert_eq!(diffs[0]["hook"], "verdict");
    assert_eq!(diffs[0]["iteration"], 1);
    assert_eq!(diffs[0]["kind"], "answer");
    assert_eq!(diffs[1]["kind"], "reason");
    assert_eq!(v["verdict"], "differs");
    let path = v["simulated_path"].as_array().unwrap();
    assert_eq!(path.last().unwrap(), "COMPLETED");
    assert!(
        path.len() < v["recorded_path"].as_array().unwrap().len(),
        "{v}"
    );

    let human = w
        .cmd()
        .args(["policy", "replay", &id, "--policy"])
        .arg(&lenient)
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&human.stdout);
    assert!(
        s.contains("verdict") && s.contains("retry") && s.contains("done"),
        "{s}"
    );
    insta::assert_snapshot!("replay_lenient", s);
}

/// The question a replay answers — where would this session have ended under P? — through
/// the binary: recorded under the built-in policy (done at iteration 1), replayed under a
/// policy that says retry at iteration 1 and impossible at iteration 2, it ends REJECTED at
/// iteration 2, the runs that were never recorded standing in as printed assumptions; one
/// verdict, and `--exit-code` agrees with it.
#[test]
fn replay_says_where_the_session_would_have_ended() {
    let w = World::new();
    let worker = w.script("w.sh", "echo work >> out");
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = w.run(&worker, &auditor, &["-q"], "t");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    let other = w.file(
        "other.lua",
        "return { verdict = function(o, ctx) \
           if ctx.iteration == 1 then return 'retry', 'add a test' end \
           return 'impossible', 'needs a database' end }",
    );
    let replay = |extra: &[&str]| {
        w.cmd()
            .args(["policy", "replay", &id, "--policy"])
            .arg(&other)
            .args(extra)
            .output()
            .unwrap()
    };
    let r = replay(&["--exit-code"]);
    assert_eq!(code(&r), 1, "{}", text(&r));
    let s = String::from_utf8_lossy(&r.stdout);
    assert!(
        s.contains("under this policy the session ends REJECTED at iteration 2 (recorded: COMPLETED at iteration 1)"),
        "{s}"
    );
    assert_eq!(s.matches("verdict:").count(), 1, "{s}");
    assert!(
        s.contains("assumed:   from iteration 2 on, the worker's output is taken as recorded"),
        "{s}"
    );
    assert!(
        s.contains("AUDITOR_EXECUTING -> REJECTED: impossible: needs a database"),
        "{s}"
    );
    let v: serde_json::Value = serde_json::from_slice(&replay(&["--json"]).stdout).unwrap();
    assert_eq!(v["verdict"], "differs");
    assert_eq!(v["simulated_end"]["state"], "REJECTED");
    assert_eq!(v["simulated_end"]["iteration"], 2);
    assert_eq!(v["recorded_end"]["state"], "COMPLETED");
    // Stopping at the divergence: no assumption, and it says what was never recorded.
    let r = replay(&["--stop-at-divergence"]);
    let s = String::from_utf8_lossy(&r.stdout);
    assert!(!s.contains("assumed:"), "{s}");
    assert!(
        s.contains("stopped:   iteration 2 of the worker would run here"),
        "{s}"
    );
    // The same policy: no difference, exit 0 with --exit-code.
    let same = w
        .cmd()
        .args(["policy", "replay", &id, "--policy"])
        .arg(w.file("same.lua", "return {}"))
        .arg("--exit-code")
        .output()
        .unwrap();
    assert_eq!(code(&same), 0, "{}", text(&same));
    assert!(
        text(&same).contains("verdict: no difference"),
        "{}",
        text(&same)
    );
}

#[test]
fn replay_works_on_a_session_that_is_still_running() {
    let w = World::new();
    let started = w.tmp.path().join("started");
    let go = w.tmp.path().join("go");
    let worker = w.script(
        "w.sh",
        &format!(
            "touch {}; while [ ! -f {} ]; do sleep 0.05; done",
            started.display(),
            go.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "t");
    w.wait_for(&started, std::time::Duration::from_secs(10));
    let id = w.session_id();
    let other = w.file("other.lua", "return { limits = { max_iterations = 1 } }");
    let r = w
        .cmd()
        .args(["policy", "replay", &id, "--policy"])
        .arg(&other)
        .arg("--json")
        .output()
        .unwrap();
    std::fs::write(&go, "").unwrap();
    assert_eq!(code(&r), 0, "{}", text(&r));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["complete"], false, "{v}");
    assert!(v["decisions"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["differences"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(
        wait_timeout(&mut child, std::time::Duration::from_secs(15)).code(),
        Some(0)
    );
}

#[test]
fn policy_path_lets_require_find_shared_modules() {
    let w = World::new();
    let lib = w.tmp.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("team.lua"), "return { word = 'done' }\n").unwrap();
    let p = w.file(
        "p.lua",
        "local team = require('team')\nreturn { verdict = function() return team.word end }\n",
    );
    let worker = w.script("w.sh", "echo ok");
    let auditor = w.script("a.sh", "echo no verdict here");
    let without = w.run(&worker, &auditor, &["--policy", p.to_str().unwrap()], "t");
    assert_eq!(code(&without), 2, "{}", text(&without));
    assert!(String::from_utf8_lossy(&without.stderr).contains("team"));
    let with = w.run(
        &worker,
        &auditor,
        &[
            "--policy",
            p.to_str().unwrap(),
            "--policy-path",
            lib.to_str().unwrap(),
        ],
        "t",
    );
    assert_eq!(code(&with), 0, "{}", text(&with));
}

/// A file that does not parse is refused with its line, exit 2, and nothing is trusted, not
/// even the good files given with it; a module (no policy table) that parses is trusted.
#[test]
fn trust_refuses_a_file_that_does_not_parse_and_trusts_nothing() {
    let w = World::new();
    let trust_file = w.private.path().join("trust.json");
    let trust = |files: &[&std::path::Path]| {
        w.cmd()
            .env("ONESHOT_TRUST_FILE", &trust_file)
            .args(["policy", "trust"])
            .args(files)
            .output()
            .unwrap()
    };
    let good = w.file("good.lua", "return {}\n");
    let bad = w.file("bad.lua", "return {\n  limits = { max_iterations = },\n}\n");
    let out = trust(&[&good, &bad]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "oneshot: error: failed to trust {b}: it does not parse, so nothing was trusted: \
             load policy {b}:2: ",
            b = bad.display()
        )),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out));
    assert!(!trust_file.exists(), "nothing may be trusted");

    // Fixed, it is trusted, with the module beside it that returns no policy.
    std::fs::write(&bad, "return {\n  limits = { max_iterations = 3 },\n}\n").unwrap();
    let module = w.file(
        "common.lua",
        "local M = {}\nfunction M.f() return 1 end\nreturn M\n",
    );
    let out = trust(&[&good, &bad, &module]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trust_file).unwrap()).unwrap();
    assert_eq!(v["files"].as_object().unwrap().len(), 3, "{v}");
}
