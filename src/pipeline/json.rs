//! A fast check that a line is one JSON object or array that `serde_json` reads back.
//!
//! Every agent event line goes through this check, so it is the hottest code in the pipeline.
//! Strings — most of a stream-json line — are skipped eight bytes at a time to the next quote,
//! backslash or (invalid) raw control byte. Rare shapes that
//! `serde_json` may still refuse although the grammar allows them (numbers with an exponent or
//! many digits, which can overflow `f64`; `\uD800`-style surrogate escapes, which must pair up)
//! are settled by `serde_json` itself, so a line accepted here always parses on read.

/// Deeper nesting is treated as not-JSON (serde_json refuses beyond 128 levels anyway).
const MAX_DEPTH: usize = 100;

/// Whether `text` is one JSON object or array (surrounding whitespace allowed) that
/// `serde_json::from_str::<serde_json::Value>` accepts.
pub(crate) fn is_json_container(text: &str) -> bool {
    let b = text.as_bytes();
    let start = skip_ws(b, 0);
    if !matches!(b.get(start), Some(b'{' | b'[')) {
        return false;
    }
    match validate(b, start) {
        Some(Verdict::Valid) => true,
        Some(Verdict::AskSerde) => strict(text),
        None => false,
    }
}

/// The outcome of the fast pass on text it did not reject.
enum Verdict {
    Valid,
    /// Grammatically valid, but with a number or escape serde_json may refuse.
    AskSerde,
}

/// The authoritative (slower, allocating) check.
fn strict(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v.is_object() || v.is_array())
}

/// Validates the container starting at `i`; `None` when the text is not valid JSON.
fn validate(b: &[u8], mut i: usize) -> Option<Verdict> {
    let mut stack = [0u8; MAX_DEPTH];
    let mut depth = 0;
    let mut ask_serde = false;
    'value: loop {
        // A value starts at `i`.
        match *b.get(i)? {
            open @ (b'{' | b'[') => {
                i = skip_ws(b, i + 1);
                let close = if open == b'{' { b'}' } else { b']' };
                if b.get(i) == Some(&close) {
                    i += 1;
                } else {
                    if depth == MAX_DEPTH {
                        return None;
                    }
                    stack[depth] = open;
                    depth += 1;
                    if open == b'{' {
                        i = key(b, i, &mut ask_serde)?;
                    }
                    continue 'value;
                }
            }
            b'"' => i = string(b, i, &mut ask_serde)?,
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number(b, i, &mut ask_serde)?,
            _ => return None,
        }
        // After a value: close containers until a `,` asks for the next value.
        loop {
            i = skip_ws(b, i);
            if depth == 0 {
                if i != b.len() {
                    return None;
                }
                return Some(if ask_serde {
                    Verdict::AskSerde
                } else {
                    Verdict::Valid
                });
            }
            match (stack[depth - 1], *b.get(i)?) {
                (b'{', b',') => {
                    i = key(b, skip_ws(b, i + 1), &mut ask_serde)?;
                    continue 'value;
                }
                (b'[', b',') => {
                    i = skip_ws(b, i + 1);
                    continue 'value;
                }
                (b'{', b'}') | (b'[', b']') => {
                    depth -= 1;
                    i += 1;
                }
                _ => return None,
            }
        }
    }
}

/// An object key and its colon at `i`; returns where the value starts.
fn key(b: &[u8], i: usize, ask_serde: &mut bool) -> Option<usize> {
    let i = skip_ws(b, string(b, i, ask_serde)?);
    (b.get(i) == Some(&b':')).then(|| skip_ws(b, i + 1))
}

/// A string starting with `"` at `i`; returns the index after its closing quote.
fn string(b: &[u8], i: usize, ask_serde: &mut bool) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        let k = next_special(b, j);
        match *b.get(k)? {
            b'"' => return Some(k + 1),
            b'\\' => {}
            // A raw control byte: not allowed inside a JSON string.
            _ => return None,
        }
        match *b.get(k + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j = k + 2,
            b'u' => {
                let hex = b.get(k + 2..k + 6)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                // D800–DFFF: a surrogate, valid only in a proper pair.
                let surrogate = hex[0].eq_ignore_ascii_case(&b'd')
                    && matches!(hex[1], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F');
                *ask_serde |= surrogate;
                j = k + 6;
            }
            _ => return None,
        }
    }
}

/// Index of the first `"`, `\\` or control byte at or after `j` (or `b.len()`). Eight bytes at
/// a time with bit tricks: strings are short, and a call into a SIMD search costs more than it
/// saves on a 10-byte string.
fn next_special(b: &[u8], mut j: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    while let Some(word) = b.get(j..j + 8) {
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let quote = w ^ (LO * u64::from(b'"'));
        let backslash = w ^ (LO * u64::from(b'\\'));
        // Each term flags its lowest matching byte exactly (higher flags may be spurious, but
        // only above a true one), so the lowest flag overall is the first special byte.
        let hits = ((quote.wrapping_sub(LO) & !quote)
            | (backslash.wrapping_sub(LO) & !backslash)
            | (w.wrapping_sub(LO * 0x20) & !w))
            & HI;
        if hits != 0 {
            return j + (hits.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    while j < b.len() && !matches!(b[j], b'"' | b'\\' | 0..0x20) {
        j += 1;
    }
    j
}

/// A number at `i`; returns the index after it.
fn number(b: &[u8], mut i: usize, ask_serde: &mut bool) -> Option<usize> {
    let start = i;
    if b[i] == b'-' {
        i += 1;
    }
    match *b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(b, i),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let end = digits(b, i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(b, i);
        if end == i {
            return None;
        }
        i = end;
        // An exponent can overflow f64, which serde_json refuses.
        *ask_serde = true;
    }
    if i - start > 20 {
        *ask_serde = true;
    }
    Some(i)
}

/// The index after a run of ASCII digits starting at `i`.
fn digits(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// `word` (`true`, `false`, `null`) at `i`; returns the index after it.
fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b.get(i..i + word.len())
        .is_some_and(|w| w == word)
        .then_some(i + word.len())
}

/// The index of the first non-whitespace byte at or after `i`.
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_cases() {
        for (text, want) in [
            (
                r#"{"a":[1,-2.5e3,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9"],"b":{}}"#,
                true,
            ),
            (" [ ] ", true),
            (r#"{"a":1,}"#, false),
            (r#"[01]"#, false),
            (r#"[1.]"#, false),
            (r#"{"a" 1}"#, false),
            (r#"["\x"]"#, false),
            (r#"[1e400]"#, false),
            (r#"["\ud800"]"#, false),
            (r#"["\ud83d\ude00"]"#, true),
            ("[\"tab\there\"]", false),
            ("[1,\t2]", true),
            (r#"[1] [2]"#, false),
            ("42", false),
            (r#""str""#, false),
            (&"[".repeat(200), false),
        ] {
            assert_eq!(is_json_container(text), want, "{text}");
        }
    }

    /// Bytes that make up JSON, so random strings are often close to valid.
    fn jsonish() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "{", "}", "[", "]", ",", ":", "\"", "\"k\"", "\"v\"", "\\", "\\u", "d800", "dc00",
            "00e9", "n", "1", "-", "0", ".", "e", "E", "+", "5", "true", "false", "null", " ",
            "\t", "é", "\u{1}",
        ]);
        prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
    }

    /// Random, mostly valid JSON documents.
    fn documents() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            any::<String>().prop_map(serde_json::Value::from),
        ];
        let tree = leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        });
        tree.prop_map(|v| serde_json::json!([v]).to_string())
    }

    proptest! {
        #[test]
        fn agrees_with_serde_json_on_noise(text in jsonish()) {
            let serde = strict(&text);
            prop_assert_eq!(is_json_container(&text), serde, "{:?}", text);
        }

        #[test]
        fn accepts_what_serde_json_writes(text in documents()) {
            prop_assert!(is_json_container(&text), "{:?}", text);
        }
    }
}
