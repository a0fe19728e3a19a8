//! The activity record, encoded straight into bytes (no `serde_json::Value` round trip):
//!
//! ```json
//! {"ts":1700000000123,"type":"activity","role":"worker","iteration":1,"executor":"command","stream":"stdout","data":{…}}
//! ```
//!
//! `data` is the redacted line itself when it is a JSON object or array, else a JSON string.
//! A piece of an over-long line carries `"partial":true` just before `data` (so `data`, the
//! possibly large field, stays last) and its `data` is always a string.

use super::json::is_json_container;
use super::{Stream, index};

/// Encodes activity records for one run; the constant middle of the record is built once.
#[derive(Debug)]
pub(crate) struct Encoder {
    /// `,"type":…,"stream":"stdout"` and the same for stderr.
    middle: [Vec<u8>; 2],
}

impl Encoder {
    /// An encoder for one run of `role` at `iteration` through `executor`.
    pub(crate) fn new(role: &str, iteration: u32, executor: &str) -> Encoder {
        let middle = [Stream::Stdout, Stream::Stderr].map(|stream| {
            // Strings go through serde_json so any name is escaped correctly.
            format!(
                r#","type":"activity","role":{},"iteration":{iteration},"executor":{},"stream":"{}""#,
                json_string(role),
                json_string(executor),
                stream.as_str()
            )
            .into_bytes()
        });
        Encoder { middle }
    }

    /// Appends the record for one line to `out`, without a newline. Valid JSON whatever
    /// `text` holds.
    pub(crate) fn encode(
        &self,
        out: &mut Vec<u8>,
        ts: u64,
        stream: Stream,
        partial: bool,
        text: &str,
    ) {
        out.extend_from_slice(b"{\"ts\":");
        push_u64(out, ts);
        out.extend_from_slice(&self.middle[index(stream)]);
        if partial {
            out.extend_from_slice(b",\"partial\":true");
        }
        out.extend_from_slice(b",\"data\":");
        if !partial && is_json_container(text) {
            out.extend_from_slice(text.as_bytes());
        } else {
            // Writing a str into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, text);
        }
        out.push(b'}');
    }
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// Appends the decimal digits of `n` (the std formatter is slower on this hot path).
fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_valid_json() {
        let e = Encoder::new("worker", 3, "my \"cmd\"");
        for (text, partial) in [
            (r#"{"a":1}"#, false),
            (r#"{"a":1"#, false),
            ("42", false),
            ("tab\there \u{1}", false),
            (r#"{"a":1}"#, true),
        ] {
            let mut rec = Vec::new();
            e.encode(&mut rec, u64::MAX, Stream::Stderr, partial, text);
            let v: serde_json::Value = serde_json::from_slice(&rec).unwrap();
            assert_eq!(v["ts"], u64::MAX);
            assert_eq!(v["executor"], "my \"cmd\"");
            assert_eq!(v["stream"], "stderr");
            let raw = !partial && text == r#"{"a":1}"#;
            assert_eq!(v["data"].is_object(), raw, "{text}");
        }
    }

    #[test]
    fn digits() {
        for n in [0, 7, 10, 1_700_000_000_123, u64::MAX] {
            let mut v = Vec::new();
            push_u64(&mut v, n);
            assert_eq!(String::from_utf8(v).unwrap(), n.to_string());
        }
    }
}
