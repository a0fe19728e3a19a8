//! The store's records in the `--json` outputs' vocabulary (docs/json.md, "One vocabulary").
//!
//! The store keeps a job, its artifacts, its audit entries and the typed causes of its moves
//! under names of its own (`id`, `session`, `runner`, `message`): a format every oneshot that
//! shares the store reads, older ones on other machines included, so it stays as it is. The
//! outputs name each id for what it is (`job_id`, `session_id`, `runner_id`, `message_id`);
//! these functions rename those keys on the way out and change nothing else.

use anyhow::{Context, Result};
use oneshot::job::Job;
use oneshot::job::JobReason;
use oneshot::job::record::{ArtifactVersion, AuditEntry};
use serde::Serialize;
use serde_json::{Map, Value};

/// `from` renamed `to`, where the object has it.
fn rename(map: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = map.remove(from) {
        map.insert(to.into(), v);
    }
}

/// `record` as JSON, its object's keys renamed by `ids`.
fn renamed<T: Serialize>(record: &T, ids: impl FnOnce(&mut Map<String, Value>)) -> Result<Value> {
    let mut v = serde_json::to_value(record).context("write a store record as JSON")?;
    if let Value::Object(map) = &mut v {
        ids(map);
    }
    Ok(v)
}

/// A job record (`job show --json`'s `job`): its own id is `job_id`, its session's
/// `session_id`.
pub(super) fn job(job: &Job) -> Result<Value> {
    renamed(job, |m| {
        rename(m, "id", "job_id");
        rename(m, "session", "session_id");
        if let Some(c) = m.get_mut("cause") {
            cause_ids(c);
        }
    })
}

/// A move's typed cause as the outputs show it (`kind` and its fields), or none when the
/// move was given words only.
pub(super) fn cause(reason: Option<&JobReason>) -> Option<Value> {
    let r = reason.filter(|r| !matches!(r, JobReason::Said { .. }))?;
    let mut v = serde_json::to_value(r).ok()?;
    cause_ids(&mut v);
    Some(v)
}

/// The session and runner a cause names, and those of the failure it wraps (`gave_up`).
fn cause_ids(v: &mut Value) {
    if let Value::Object(m) = v {
        rename(m, "session", "session_id");
        rename(m, "runner", "runner_id");
        if let Some(f) = m.get_mut("failure") {
            cause_ids(f);
        }
    }
}

/// An artifact version: the session that made it is `session_id`.
pub(super) fn artifact(a: &ArtifactVersion) -> Result<Value> {
    renamed(a, |m| rename(m, "session", "session_id"))
}

/// An audit entry: in its `metadata`, the session is `session_id` and a `message` entry's
/// message `message_id`.
pub(super) fn audit(e: &AuditEntry) -> Result<Value> {
    renamed(e, |m| {
        if let Some(Value::Object(meta)) = m.get_mut("metadata") {
            rename(meta, "session", "session_id");
            rename(meta, "message", "message_id");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_names_its_ids_and_those_of_the_failure_it_wraps() {
        let fresh = JobReason::FreshConversation {
            session: "s1".into(),
            runner: "r1".into(),
        };
        let v = cause(Some(&fresh)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "fresh_conversation", "session_id": "s1", "runner_id": "r1"})
        );
        let gave_up = JobReason::GaveUp {
            failure: Box::new(JobReason::HadEnded {
                session: "s2".into(),
            }),
            retries: 2,
        };
        assert_eq!(
            cause(Some(&gave_up)).unwrap()["failure"]["session_id"],
            "s2"
        );
        // Words only: no typed cause to show.
        assert!(cause(Some(&JobReason::Said { text: "x".into() })).is_none());
        assert!(cause(None).is_none());
    }
}
