//! The session's records through the log's writer and reader: a blobbed record comes back
//! whole, and the pipeline's hand-encoded activity records read back as [`Record::Activity`].

use super::record::blob::Blobber;
use super::{Activity, ProcessEvent, ProcessRecord, Record};
use serde_json::json;
use std::sync::Arc;

#[test]
fn blobbed_records_come_back_whole() {
    let long = "x".repeat(2000);
    let record = Record::Process(ProcessRecord {
        ts: 1,
        role: crate::process::Role::Auditor,
        iteration: 2,
        event: ProcessEvent::Exited {
            exit_code: Some(0),
            signal: None,
            tail: long.clone(),
            stdout: None,
        },
    });
    let mut blobber = Blobber::default();
    let lines = blobber
        .encode(
            &record,
            &crate::redact::Redactor::new(&[], Vec::new()).unwrap(),
        )
        .unwrap();
    assert_eq!(lines.len(), 2, "the blob, then the record");
    assert_eq!(lines[0]["type"], "blob");
    assert!(lines[1]["tail"]["$blob"].is_string());
    let log = super::Log::decode(lines);
    assert_eq!(log.records[1], record);
    assert!(log.missing.is_empty());
}

#[test]
fn the_pipelines_activity_records_read_as_the_activity_type() {
    use crate::pipeline::{Pipeline, Redactor, RunMeta, Stream};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oneshot-log.json");
    let mut log = super::LogWriter::open(&path).unwrap();
    let meta = RunMeta {
        role: "worker",
        iteration: 3,
        executor: "command".into(),
    };
    let redactor = Arc::new(Redactor::new(&[], Vec::new()).unwrap());
    let mut pipeline = Pipeline::new(meta, redactor);
    let mut lines = Vec::new();
    let input = "{\"type\":\"assistant\",\"n\":1}\nplain text \u{1} with \"quotes\"\n";
    pipeline
        .push(
            Stream::Stderr,
            input.as_bytes(),
            1_700_000_000_123,
            &mut log,
            Some(&mut lines),
        )
        .unwrap();
    pipeline
        .finish(1_700_000_000_124, &mut log, Some(&mut lines))
        .unwrap();
    drop(log);
    let read = super::Log::read(&path).unwrap();
    assert!(read.skipped.is_empty(), "{:?}", read.skipped);
    let activity = |data| {
        Record::Activity(Activity {
            ts: 1_700_000_000_123,
            role: crate::process::Role::Worker,
            iteration: 3,
            executor: "command".into(),
            stream: Stream::Stderr,
            partial: false,
            data,
        })
    };
    assert_eq!(
        read.records,
        [
            activity(json!({"type": "assistant", "n": 1})),
            activity(json!("plain text \u{1} with \"quotes\"")),
        ]
    );
}
