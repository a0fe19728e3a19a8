//! The activity log on disk: torn lines after a kill, tolerant reading, polling for `--follow`.

use std::fs;
use std::io::Write;

use crate::tmpfs;
use oneshot::store::{LogWriter, read_from, read_log};
use serde_json::{Value, json};
use tmpfs::{Tmpfs, fill};

fn temp_log() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oneshot-log.json");
    (dir, path)
}

#[test]
fn writer_starts_on_a_new_line_after_a_torn_record() {
    let (_dir, path) = temp_log();
    fs::write(&path, "{\"ts\":1,\"type\":\"a\"}\n{\"ts\":2,\"ty").unwrap();
    let mut log = LogWriter::open(&path).unwrap();
    log.append(&json!({"ts": 3, "type": "state_change"}))
        .unwrap();
    log.sync().unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "{\"ts\":1,\"type\":\"a\"}\n{\"ts\":2,\"ty\n{\"ts\":3,\"type\":\"state_change\"}\n"
    );
    let read = read_log(&path).unwrap();
    assert_eq!(read.records.len(), 2);
    assert_eq!(read.records[1]["ts"], 3);
    assert_eq!(read.warnings.len(), 1);
    assert!(read.warnings[0].starts_with("oneshot-log.json:2: skipped an unparsable line"));
}

#[test]
fn writer_appends_to_a_clean_file_without_a_blank_line() {
    let (_dir, path) = temp_log();
    for ts in [1, 2] {
        let mut log = LogWriter::open(&path).unwrap();
        log.append(&json!({ "ts": ts })).unwrap();
        log.append_raw(br#"{"raw":true}"#).unwrap();
    }
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"ts\":1}\n{\"raw\":true}\n{\"ts\":2}\n{\"raw\":true}\n"
    );
}

#[test]
fn reader_skips_a_torn_last_line_and_a_corrupt_middle_line() {
    let (_dir, path) = temp_log();
    fs::write(&path, "{\"n\":1}\nnot json\n\n{\"n\":2}\n{\"n\":3,\"da").unwrap();
    let read = read_log(&path).unwrap();
    let ns: Vec<&Value> = read.records.iter().map(|r| &r["n"]).collect();
    assert_eq!(ns, [1, 2]);
    assert_eq!(read.warnings.len(), 2);
    assert!(read.warnings[0].starts_with("oneshot-log.json:2: skipped an unparsable line ("));
    assert_eq!(
        read.warnings[1],
        "oneshot-log.json:5: skipped a torn last line (oneshot was probably killed while writing)"
    );
}

#[test]
fn reader_reports_a_missing_file() {
    let (_dir, path) = temp_log();
    let err = read_log(&path).unwrap_err();
    // The message names the file; the OS error is its source, printed once by the chain.
    assert_eq!(err.to_string(), format!("read {}", path.display()));
    assert_eq!(
        oneshot::error::chain(&err)
            .matches("No such file or directory")
            .count(),
        1,
        "{err}"
    );
}

#[test]
fn read_from_keeps_a_partial_last_line_for_the_next_poll() {
    let (_dir, path) = temp_log();
    fs::write(&path, "{\"n\":1}\n{\"n\":2}\n{\"n\":").unwrap();
    let first = read_from(&path, 0).unwrap();
    assert_eq!(first.records, [json!({"n": 1}), json!({"n": 2})]);
    assert_eq!(first.offset, 16);
    assert!(first.warnings.is_empty());

    let again = read_from(&path, first.offset).unwrap();
    assert!(again.records.is_empty());
    assert_eq!(again.offset, first.offset);

    let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(b"3}\ngarbage\n{\"n\":4}\n").unwrap();
    let next = read_from(&path, again.offset).unwrap();
    assert_eq!(next.records, [json!({"n": 3}), json!({"n": 4})]);
    assert_eq!(next.warnings.len(), 1);
    assert!(next.warnings[0].starts_with("oneshot-log.json@24: skipped an unparsable line"));
    assert_eq!(next.offset, fs::metadata(&path).unwrap().len());
}

/// Streaming output fills buffers that a background thread writes; a flush waits for them, so
/// after every flush the file holds exactly the records appended so far, in order — also with
/// a record far larger than a buffer in between.
#[test]
fn flush_waits_for_background_writes_and_keeps_order() {
    let (_dir, path) = temp_log();
    let mut w = LogWriter::open(&path).unwrap();
    let filler = "x".repeat(1000);
    let mut appended = 0u64;
    for round in 0..5u64 {
        for i in 0..3000u64 {
            let n = round * 3000 + i;
            let big = (n == 4321).then(|| "y".repeat(3 << 20));
            w.append(&json!({"n": n, "fill": filler, "big": big}))
                .unwrap();
            appended += 1;
        }
        w.flush().unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let ns: Vec<u64> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["n"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(ns, (0..appended).collect::<Vec<_>>(), "round {round}");
    }
    w.sync().unwrap();
    drop(w);
    assert_eq!(read_log(&path).unwrap().records.len() as u64, appended);
}

/// A write that fails in the background writer (here: a full tmpfs) is reported by the next
/// flush, not lost; appends keep working until then and the writer shuts down cleanly.
#[test]
fn a_failed_background_write_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_mount) = Tmpfs::mount(&dir.path().join("disk"), "64k") else {
        return;
    };
    fill(&dir.path().join("disk"), 0);
    let mut w = LogWriter::open(dir.path().join("disk/log.jsonl")).unwrap();
    let filler = "x".repeat(1000);
    // Enough to fill several buffers and hand them to the background writer; the error comes
    // back from a later append or, at the latest, from the flush.
    let mut error = None;
    for n in 0..2000u64 {
        if let Err(e) = w.append(&json!({"n": n, "fill": filler})) {
            error = Some(e);
            break;
        }
    }
    let error = error
        .or_else(|| w.flush().err())
        .expect("a full disk must be reported");
    assert_eq!(error.raw_os_error(), Some(libc::ENOSPC), "{error}");
}
