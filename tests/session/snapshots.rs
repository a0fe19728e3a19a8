//! Snapshots of the transition trace and the log records, with ids, times and pids redacted;
//! each snapshot is also parsed back (round trip) so the formats stay machine-readable.

use crate::common;
use common::*;
use serde_json::Value;

/// Replaces the volatile values (times, ids, pids, hashes, paths) with stable placeholders.
fn scrub(v: &mut Value, id: &str, work: &str) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                match k.as_str() {
                    "ts" | "created_ms" | "updated_ms" | "pid" | "pgid" | "start_time"
                    | "duration_us" | "elapsed" => *val = Value::from("[n]"),
                    "created_at" | "updated_at" => *val = Value::from("[time]"),
                    _ => scrub(val, id, work),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| scrub(x, id, work)),
        Value::String(s) if s.contains(id) || s.contains(work) => {
            *s = s.replace(id, "[id]").replace(work, "[work]");
        }
        _ => {}
    }
}

#[test]
fn retry_then_done_trace_and_log() {
    let w = World::new();
    let worker = w.script(
        "w.sh",
        "case \"$ONESHOT_PROMPT\" in *CRITIQUE*) echo second > out;; *) echo first > out;; esac; echo '{\"type\":\"result\",\"ok\":true}'",
    );
    let auditor = w.script(
        "a.sh",
        "if grep -q second out; then echo 'VERDICT: DONE'; else echo 'VERDICT: RETRY say second'; fi",
    );
    let out = w.run(&worker, &auditor, &["-q"], "write out");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    let work = w.work().canonicalize().unwrap().display().to_string();

    let mut history = w.state(&id)["history"].clone();
    scrub(&mut history, &id, &work);
    insta::assert_json_snapshot!("trace", history);

    let mut log: Vec<Value> = w
        .log(&id)
        .into_iter()
        .filter(|r| r["type"] != "session")
        .collect();
    for r in &mut log {
        scrub(r, &id, &work);
        if let Some(h) = r.get_mut("policy_hash") {
            *h = Value::from("[hash]");
        }
    }
    insta::assert_json_snapshot!("log", log);

    // Round trip through the one record type: every line the engine wrote reads as a typed
    // record and writes back as the same JSON (blob references resolved first, as readers do).
    let raw = w.log(&id);
    let typed = oneshot::store::Log::decode(raw.clone());
    assert!(typed.skipped.is_empty(), "{:?}", typed.skipped);
    assert_eq!(typed.records.len(), raw.len());
    for (record, line) in typed.records.iter().zip(&raw) {
        let again = serde_json::to_value(record).unwrap();
        if !line.to_string().contains("$blob") {
            assert_eq!(&again, line, "{record:?}");
        }
    }
}
