//! Secret redaction: built-in credential patterns, secret-looking environment values and the
//! policy's extra patterns, applied before any output reaches disk.

use std::borrow::Cow;
use std::ops::Range;

use aho_corasick::{AhoCorasick, Input, MatchKind};
use regex::Regex;

use super::rules::{self, Rule};

/// What a secret is replaced with. A recognisable prefix of a known credential is kept in front
/// of it (`sk-ant-[REDACTED]`, `ghp_[REDACTED]`, `Bearer [REDACTED]`, `AKIA[REDACTED]`); a private
/// key block, an environment value or a policy pattern match is replaced entirely.
pub const REDACTED: &str = "[REDACTED]";

/// Environment values shorter than this are never treated as secrets: redacting `1` or `true`
/// everywhere would destroy the log and protect nothing.
pub const MIN_LITERAL_LEN: usize = 8;

/// Name fragments (compared case-insensitively) that make an environment variable secret.
const SECRET_NAME_PARTS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"];

/// A policy `redact` pattern that does not compile.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedactError {
    /// The pattern is not a valid regex (Rust `regex` syntax).
    #[error("compile redact pattern {pattern:?}")]
    Pattern {
        /// The pattern as given by the policy.
        pattern: String,
        /// Why it does not compile.
        #[source]
        source: regex::Error,
    },
    /// The literal secrets could not be compiled into a matcher (e.g. far too many of them).
    #[error("build the secret matcher")]
    Literals(#[from] aho_corasick::BuildError),
}

/// Finds and replaces secrets in text. Stateless and shareable (`Arc<Redactor>`); the per-run
/// [`Pipeline`](super::Pipeline) adds the one piece of state redaction needs across lines (an
/// open private-key block).
///
/// The common case — a line with no secret — costs one Aho-Corasick scan for the rules' trigger
/// literals (SIMD-accelerated), one for the environment literals if there are any, and the
/// policy's patterns if there are any.
pub struct Redactor {
    rules: Vec<Rule>,
    /// Trigger literals; pattern id → bit mask of the rules it enables.
    triggers: AhoCorasick,
    trigger_rules: Vec<u32>,
    /// Secret values taken literally (environment values).
    literals: Option<AhoCorasick>,
    /// The policy's patterns, combined into one alternation.
    extra: Option<Regex>,
    private_key_rule: usize,
}

impl Redactor {
    /// Builds a redactor from the built-in patterns, the policy's `extra_patterns` (Rust regex
    /// syntax; the whole match is replaced) and `literals` (exact secret values; values shorter
    /// than [`MIN_LITERAL_LEN`] are ignored).
    pub fn new(extra_patterns: &[String], literals: Vec<String>) -> Result<Redactor, RedactError> {
        let (rules, pairs) = rules::builtin();
        // One pattern per distinct literal, carrying the rules of every pair that names it
        // (a duplicate pattern would never match, leftmost-first always picks the first).
        let mut literal_masks: Vec<(&str, u32)> = Vec::new();
        for (literal, rule) in pairs {
            match literal_masks.iter_mut().find(|(l, _)| *l == literal) {
                Some((_, mask)) => *mask |= 1 << rule,
                None => literal_masks.push((literal, 1 << rule)),
            }
        }
        let triggers = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(literal_masks.iter().map(|(l, _)| *l))?;
        let trigger_rules = literal_masks.iter().map(|(_, mask)| *mask).collect();

        let mut literals: Vec<String> = literals
            .into_iter()
            .filter(|l| l.len() >= MIN_LITERAL_LEN)
            .collect();
        literals.sort();
        literals.dedup();
        let literals = if literals.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&literals)?,
            )
        };

        let extra = compile_extra(extra_patterns)?;
        Ok(Redactor {
            rules,
            triggers,
            trigger_rules,
            literals,
            extra,
            private_key_rule: rules::private_key_rule(),
        })
    }

    /// Like [`Redactor::new`], with the values of every environment variable whose name contains
    /// `KEY`, `TOKEN`, `SECRET`, `PASSWORD` or `PASSWD` (any case) as literals.
    pub fn from_env(extra_patterns: &[String]) -> Result<Redactor, RedactError> {
        Redactor::new(extra_patterns, secret_env_values(std::env::vars_os()))
    }

    /// Returns `text` with every secret replaced by [`REDACTED`]; borrowed when nothing matched.
    /// A private-key block without its END marker is redacted to the end of `text`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_line(text).0
    }

    /// Redacts `text` and also says whether it opens a private-key block that continues on the
    /// next lines: the BEGIN marker ends the line, as in a key printed raw by `cat`.
    pub(crate) fn redact_line<'a>(&self, text: &'a str) -> (Cow<'a, str>, bool) {
        let mut spans: Vec<Range<usize>> = Vec::new();
        let mask = self.triggered(text);
        let mut opens_block = false;
        if mask != 0 {
            for (i, rule) in self.rules.iter().enumerate() {
                if mask & (1 << i) == 0 {
                    continue;
                }
                for caps in rule.regex().captures_iter(text) {
                    let Some(secret) = caps.get(rule.group()) else {
                        continue;
                    };
                    if rule.check.accepts(secret.as_str()) {
                        spans.push(secret.range());
                    }
                }
            }
            if mask & (1 << self.private_key_rule) != 0 {
                opens_block = ends_with_begin_marker(text);
            }
        }
        if let Some(literals) = &self.literals {
            spans.extend(literals.find_iter(text).map(|m| m.range()));
        }
        if let Some(extra) = &self.extra {
            spans.extend(
                extra
                    .find_iter(text)
                    .filter(|m| !m.is_empty())
                    .map(|m| m.range()),
            );
        }
        if spans.is_empty() {
            return (Cow::Borrowed(text), opens_block);
        }
        (Cow::Owned(replace_spans(text, &mut spans)), opens_block)
    }

    /// Bit mask of the rules whose trigger literals occur in `text`. Each search restarts one
    /// byte after the previous hit's start, so a trigger overlapping another is never skipped.
    fn triggered(&self, text: &str) -> u32 {
        let mut mask = 0u32;
        let mut at = 0;
        while at < text.len() {
            let Some(m) = self.triggers.find(Input::new(text).range(at..)) else {
                break;
            };
            mask |= self.trigger_rules[m.pattern().as_usize()];
            at = m.start() + 1;
        }
        mask
    }
}

impl std::fmt::Debug for Redactor {
    /// Counts only: the literal matcher holds the secret values themselves, and a debug print
    /// of the redactor must not become the leak it exists to prevent.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("builtin_rules", &self.rules.len())
            .field(
                "literals",
                &self.literals.as_ref().map_or(0, |l| l.patterns_len()),
            )
            .field("extra", &self.extra.is_some())
            .finish()
    }
}

/// Compiles the policy's patterns: each one alone first, for an error naming the bad one, then
/// as one alternation so a line is scanned once.
fn compile_extra(patterns: &[String]) -> Result<Option<Regex>, RedactError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    for p in patterns {
        Regex::new(p).map_err(|source| RedactError::Pattern {
            pattern: p.clone(),
            source,
        })?;
    }
    let combined = patterns
        .iter()
        .map(|p| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|");
    Regex::new(&combined)
        .map(Some)
        .map_err(|source| RedactError::Pattern {
            pattern: combined,
            source,
        })
}

/// Whether `text` ends with a private-key BEGIN marker (trailing whitespace allowed).
fn ends_with_begin_marker(text: &str) -> bool {
    let t = text.trim_end();
    let Some(head) = t
        .strip_suffix("PRIVATE KEY-----")
        .or_else(|| t.strip_suffix("PRIVATE KEY BLOCK-----"))
    else {
        return false;
    };
    match head.rfind("-----BEGIN ") {
        Some(at) => head[at + "-----BEGIN ".len()..]
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' '),
        None => false,
    }
}

/// Replaces the (possibly overlapping, unsorted) `spans` of `text` with [`REDACTED`].
fn replace_spans(text: &str, spans: &mut [Range<usize>]) -> String {
    spans.sort_unstable_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut i = 0;
    while i < spans.len() {
        let start = spans[i].start.max(done);
        let mut end = spans[i].end;
        i += 1;
        while i < spans.len() && spans[i].start <= end {
            end = end.max(spans[i].end);
            i += 1;
        }
        if end <= start {
            continue;
        }
        out.push_str(&text[done..start]);
        out.push_str(REDACTED);
        done = end;
    }
    out.push_str(&text[done..]);
    out
}

/// Values (at least [`MIN_LITERAL_LEN`] bytes, valid UTF-8) of variables with secret-looking names.
pub(crate) fn secret_env_values(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<String> {
    vars.filter_map(|(name, value)| {
        let name = name.to_str()?.to_ascii_uppercase();
        let value = value.into_string().ok()?;
        let secret = SECRET_NAME_PARTS.iter().any(|p| name.contains(p));
        (secret && value.len() >= MIN_LITERAL_LEN).then_some(value)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_spans_merge() {
        let mut spans = vec![4..8, 0..2, 6..10];
        assert_eq!(
            replace_spans("abcdefghijkl", &mut spans),
            "[REDACTED]cd[REDACTED]kl"
        );
    }

    #[test]
    fn oneshots_own_dashboard_secrets_keep_only_their_kind() {
        let r = Redactor::new(&[], Vec::new()).unwrap();
        let body = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdE";
        for kind in ["osk_", "osl_", "oss_"] {
            let said = r.redact(&format!("token {kind}{body} here")).into_owned();
            assert_eq!(said, format!("token {kind}[REDACTED] here"));
        }
        // A word that merely starts like one stays.
        assert_eq!(r.redact("osk_short").as_ref(), "osk_short");
    }

    #[test]
    fn env_names_are_filtered() {
        let vars = [
            ("MY_API_KEY", "abcdefgh1234"),
            ("github_token", "tok_0123456789"),
            ("DEBUG", "verylongvalue123"),
            ("SECRET_FLAG", "true"),
        ]
        .into_iter()
        .map(|(n, v)| (n.into(), v.into()));
        assert_eq!(
            secret_env_values(vars),
            vec!["abcdefgh1234".to_owned(), "tok_0123456789".to_owned()]
        );
    }

    #[test]
    fn begin_marker_detection() {
        assert!(ends_with_begin_marker("-----BEGIN RSA PRIVATE KEY-----  "));
        assert!(ends_with_begin_marker(
            "$ cat k\n-----BEGIN PRIVATE KEY-----"
        ));
        assert!(!ends_with_begin_marker(
            r#"{"c":"-----BEGIN PRIVATE KEY-----\nMIIE"}"#
        ));
    }
}
