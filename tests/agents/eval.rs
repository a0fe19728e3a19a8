//! `oneshot eval` with a real agent CLI offline: the shipped example manifest passes when
//! Claude (answering from the fake model server) classifies each capture right, and a model
//! that is wrong one time in three fails pass^k with its answers counted.

use super::harness::run;
use super::with_oneshot::{LIMIT, oneshot};
use crate::fake_model::{FakeModel, Reply};
use serde_json::{Value, json};
use std::path::Path;

fn state(s: &str) -> Value {
    json!({"state": s, "confidence": 0.9, "evidence": ["the last lines"], "summary": "As shown."})
}

#[test]
fn claude_passes_the_shipped_example() {
    let sb = super::harness::Sandbox::new();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/eval");
    // One answer per case, in the manifest's order (one case at a time, k = 1); the golden
    // case is answered with its golden file, since its whole answer is compared.
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(example.join("aider-error.want.json")).unwrap(),
    )
    .unwrap();
    let model = FakeModel::with([
        Reply::Json(state("Completed")),
        Reply::Json(state("Needs Authorization")),
        Reply::Json(state("Waiting")),
        Reply::Json(golden),
    ]);
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&claude]);
    c.arg("eval")
        .arg(example.join("manifest.yaml"))
        .args(["--target", "claude", "--k", "1"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(r.stdout.contains("4 passed, 0 failed"), "{}", r.dump());
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 4, "{}", r.dump());
    assert_eq!(
        reqs[0].count("Nested quotes now parse"),
        1,
        "the capture is in the prompt"
    );
}

#[test]
fn a_model_wrong_one_time_in_three_fails() {
    let sb = super::harness::Sandbox::new();
    let model = FakeModel::with([
        Reply::Json(state("Completed")),
        Reply::Json(state("Completed")),
        Reply::Json(state("Waiting")),
    ]);
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    let manifest = sb.tmp.path().join("m.yaml");
    std::fs::write(
        &manifest,
        "schema: nudgenik\ncases:\n  - id: done\n    prompt: 'The agent printed: Done. All tests pass.'\n    want: Completed\n",
    )
    .unwrap();
    let mut c = oneshot(&sb, &[&claude]);
    c.arg("eval")
        .arg(&manifest)
        .args(["--target", "claude", "--k", "3"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(
        r.stdout.contains("Completed x2, Waiting x1"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("0 passed, 1 failed"), "{}", r.dump());
}
