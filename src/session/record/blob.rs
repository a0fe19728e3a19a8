//! Long strings as blobs: written once as a `blob` record, referenced as `{"$blob": HASH}`.
//!
//! A 64 KiB output tail that eight hook calls see costs one copy in the log, not eight. The
//! writer ([`Blobber`]) replaces every string longer than 256 bytes in a blobbed record;
//! readers ([`Blobs`]) put the text back before decoding, so the record types always hold text.

use super::{Blob, Record};
use crate::policy::sha256_hex;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Strings longer than this (in bytes) become blobs.
pub(crate) const BLOB_MIN: usize = 256;

/// The writer's side: which blobs this process already wrote.
#[derive(Debug, Default)]
pub struct Blobber {
    written: HashSet<String>,
}

impl Blobber {
    /// `record` as the lines to append: every string passed through `redactor` (a record
    /// cannot be encoded without one), then, for a blobbed record, its new blobs first and the
    /// record (with references) last.
    pub fn encode(
        &mut self,
        record: &Record,
        redactor: &crate::redact::Redactor,
    ) -> Result<Vec<Value>, serde_json::Error> {
        let mut value = serde_json::to_value(record)?;
        redactor.redact_json(&mut value);
        let mut lines = Vec::new();
        if record.is_blobbed() {
            let ts = record.ts().unwrap_or(0);
            for (sha256, text) in self.blobify(&mut value) {
                lines.push(serde_json::to_value(Record::Blob(Blob {
                    ts,
                    sha256,
                    text,
                }))?);
            }
        }
        lines.push(value);
        Ok(lines)
    }

    /// Replaces long strings in `value` by references; returns the `(hash, text)` of each blob
    /// not written before by this blobber, to be written before `value`.
    pub fn blobify(&mut self, value: &mut Value) -> Vec<(String, String)> {
        let mut new = Vec::new();
        self.walk(value, &mut new);
        new
    }

    fn walk(&mut self, value: &mut Value, new: &mut Vec<(String, String)>) {
        match value {
            Value::String(s) if s.len() > BLOB_MIN => {
                let hash = sha256_hex(s.as_bytes());
                let text = std::mem::take(s);
                *value = reference(&hash);
                if self.written.insert(hash.clone()) {
                    new.push((hash, text));
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk(v, new)),
            Value::Object(map) => map.values_mut().for_each(|v| self.walk(v, new)),
            _ => {}
        }
    }
}

/// `{"$blob": hash}`.
fn reference(hash: &str) -> Value {
    let mut m = Map::with_capacity(1);
    m.insert("$blob".into(), Value::String(hash.to_string()));
    Value::Object(m)
}

/// The hash of a `{"$blob": hash}` object.
fn blob_ref(map: &Map<String, Value>) -> Option<&str> {
    if map.len() != 1 {
        return None;
    }
    map.get("$blob")?.as_str()
}

/// The reader's side: blob texts by hash.
#[derive(Debug, Default, Clone)]
pub struct Blobs {
    texts: HashMap<String, String>,
}

impl Blobs {
    /// Remembers a blob's text.
    pub fn insert(&mut self, hash: String, text: String) {
        self.texts.insert(hash, text);
    }

    /// Replaces every reference in `value` by its text; a reference to an unknown blob becomes
    /// an empty string and its hash is added to `missing` (once).
    pub fn resolve(&self, value: &mut Value, missing: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(hash) = blob_ref(map) {
                    *value = match self.texts.get(hash) {
                        Some(text) => Value::String(text.clone()),
                        None => {
                            if !missing.iter().any(|m| m == hash) {
                                missing.push(hash.to_string());
                            }
                            Value::String(String::new())
                        }
                    };
                    return;
                }
                map.values_mut().for_each(|v| self.resolve(v, missing));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.resolve(v, missing)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_strings_go_out_once_and_come_back() {
        let long = "x".repeat(BLOB_MIN + 1);
        let mut b = Blobber::default();
        let mut v = json!({"a": long, "b": ["short", long], "c": {"d": long}});
        let new = b.blobify(&mut v);
        assert_eq!(new.len(), 1, "one distinct text, one blob");
        assert_eq!(v["b"][0], "short");
        assert!(v["a"]["$blob"].is_string());
        let again = b.blobify(&mut json!({"e": long}));
        assert!(again.is_empty(), "already written by this blobber");

        let mut blobs = Blobs::default();
        for (h, t) in new {
            blobs.insert(h, t);
        }
        let mut missing = Vec::new();
        blobs.resolve(&mut v, &mut missing);
        assert_eq!(
            v,
            json!({"a": long, "b": ["short", long], "c": {"d": long}})
        );
        assert!(missing.is_empty());
    }

    #[test]
    fn a_missing_blob_reads_empty_and_is_named() {
        let mut v = json!({"a": {"$blob": "sha256:00"}, "b": {"$blob": "sha256:00"}});
        let mut missing = Vec::new();
        Blobs::default().resolve(&mut v, &mut missing);
        assert_eq!(v, json!({"a": "", "b": ""}));
        assert_eq!(missing, ["sha256:00"]);
    }
}
