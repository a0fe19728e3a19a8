//! [`Redacted`]: what oneshot writes — a state file, a job, an audit entry, a commit message —
//! as a type only a [`Redactor`] can make. The stores take nothing else, so a field added to a
//! record tomorrow is redacted with the rest: no list of call sites to remember.

use super::Redactor;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::borrow::Cow;

/// A value every string of which went through a [`Redactor`]. Built only by
/// [`Redactor::seal`] (a record: every string field, however deep) and [`Redactor::text`]
/// (one text); read with [`Redacted::get`].
#[derive(Debug, Clone, PartialEq)]
pub struct Redacted<T>(T);

impl<T> Redacted<T> {
    /// The redacted value.
    pub fn get(&self) -> &T {
        &self.0
    }

    /// The redacted value, owned.
    pub fn into_inner(self) -> T {
        self.0
    }
}

/// A record could not be redacted: it did not go through JSON and back (a bug in its serde
/// shape, never the data's fault).
#[derive(Debug, thiserror::Error)]
#[error("cannot redact a record: {0}")]
pub struct SealError(#[from] serde_json::Error);

impl Redactor {
    /// `value` with every string in it — every field, every list item, however deep —
    /// redacted: the only way to make what the stores write.
    pub fn seal<T: Serialize + DeserializeOwned>(&self, value: &T) -> Result<Redacted<T>, SealError> {
        let mut json = serde_json::to_value(value)?;
        self.redact_json(&mut json);
        Ok(Redacted(serde_json::from_value(json)?))
    }

    /// One text, redacted (a commit message, a branch's description).
    pub fn text(&self, text: &str) -> Redacted<String> {
        Redacted(self.redact(text).into_owned())
    }

    /// Redacts every string in `value` in place.
    pub fn redact_json(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
    struct Record {
        title: String,
        nested: Vec<(String, u32)>,
        note: Option<String>,
    }

    #[test]
    fn every_string_of_a_record_is_redacted() {
        let r = Redactor::new(&["zz-[0-9]+".to_string()], vec!["hunter2hunter2".into()]).unwrap();
        let rec = Record {
            title: "key zz-1234".into(),
            nested: vec![("pass hunter2hunter2".into(), 7)],
            note: None,
        };
        let sealed = r.seal(&rec).unwrap();
        assert_eq!(sealed.get().title, "key [REDACTED]");
        assert_eq!(sealed.get().nested[0], ("pass [REDACTED]".to_string(), 7));
        let clean = Record {
            title: "nothing here".into(),
            ..rec.clone()
        };
        assert_eq!(r.seal(&Record { nested: vec![], ..clean.clone() }).unwrap().get().title, "nothing here");
        assert_eq!(r.text("zz-9 and zz-10").get(), "[REDACTED] and [REDACTED]");
    }
}
