//! Raw log lines → [`Record`]s, with blob references resolved.

use super::{LogError, read_log};
use crate::session::record::blob::Blobs;
use crate::session::record::{Blob, Record};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// A whole log as typed records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Log {
    /// Every record that decoded, in log order (blob records included).
    pub records: Vec<Record>,
    /// For each of `records`, its position among all the log's records, from 1 (the line
    /// number when no line was skipped), so a message can point at it.
    pub positions: Vec<usize>,
    /// Records that did not decode: position, `type`, and why.
    pub skipped: Vec<(usize, String, String)>,
    /// For records that referenced blobs the log lacks: their index in `records` and the
    /// missing hashes (their text reads as empty).
    pub missing: Vec<(usize, Vec<String>)>,
    /// One line per skipped line or record, naming where and why.
    pub warnings: Vec<String>,
}

impl Log {
    /// Reads and decodes the log at `path`.
    pub fn read(path: impl AsRef<Path>) -> Result<Log, LogError> {
        let raw = read_log(path)?;
        let mut log = Log::decode(raw.records);
        let mut warnings = raw.warnings;
        warnings.append(&mut log.warnings);
        log.warnings = warnings;
        Ok(log)
    }

    /// Decodes raw records (as [`read_log`] returns them). Blobs are collected first, so a
    /// reference resolves wherever in the log its blob is (a resumed session may write one
    /// again, a torn write may have lost one).
    pub fn decode(values: Vec<Value>) -> Log {
        let mut decoder = Decoder::default();
        for v in &values {
            decoder.learn(v);
        }
        let mut log = Log::default();
        for (i, v) in values.into_iter().enumerate() {
            let kind = v
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("(no type)")
                .to_string();
            match decoder.decode(v) {
                Ok((record, missing)) => {
                    if !missing.is_empty() {
                        log.missing.push((log.records.len(), missing));
                    }
                    log.records.push(record);
                    log.positions.push(i + 1);
                }
                Err(e) => {
                    log.warnings.push(format!("record {}: skipped: {e}", i + 1));
                    log.skipped.push((i + 1, kind, e));
                }
            }
        }
        log
    }

    /// The missing blob hashes of record `index`, if any.
    pub fn missing_blobs(&self, index: usize) -> &[String] {
        self.missing
            .iter()
            .find(|(i, _)| *i == index)
            .map_or(&[], |(_, m)| m.as_slice())
    }
}

/// Decodes records one at a time, remembering blobs as they pass (for `oneshot log --follow`,
/// where blobs are always written before the records that reference them).
#[derive(Debug, Default, Clone)]
pub struct Decoder {
    blobs: Blobs,
}

impl Decoder {
    /// Remembers `value` if it is a blob record.
    pub fn learn(&mut self, value: &Value) {
        if value.get("type").and_then(Value::as_str) == Some("blob")
            && let Ok(b) = Blob::deserialize(value)
        {
            self.blobs.insert(b.sha256, b.text);
        }
    }

    /// Decodes one raw record: resolves blob references, then reads it as a [`Record`].
    /// Returns the hashes of blobs it referenced but that were never seen.
    pub fn decode(&mut self, mut value: Value) -> Result<(Record, Vec<String>), String> {
        self.learn(&value);
        let mut missing = Vec::new();
        self.blobs.resolve(&mut value, &mut missing);
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("(no type)")
            .to_string();
        let record =
            Record::deserialize(value).map_err(|e| format!("not a valid `{kind}` record: {e}"))?;
        Ok((record, missing))
    }
}
