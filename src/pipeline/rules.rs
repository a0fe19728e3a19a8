//! The built-in secret patterns and the literal triggers that gate them.
//!
//! Each rule is a regex whose **last capture group** is the secret; everything before it (a
//! recognisable prefix such as `sk-ant-`, `ghp_` or `Bearer `) is kept so a reader of the log can
//! still tell what kind of credential was there. Rules only run on a line when one of their
//! trigger literals occurs in it, so a line without any trigger costs one Aho-Corasick scan.

use regex::Regex;

/// Matches where a token may start: a word boundary, or right after a JSON escape such as `\n`
/// (inside a JSON string `\nsk-…` has the letter `n` before the key, so `\b` alone would miss it).
const START: &str = r"(?:\\[nrtbf]|\b)";

/// An extra plausibility test on the secret, so prose look-alikes are not redacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// The prefix is distinctive enough; any body counts.
    None,
    /// Random keys contain a digit or an upper-case letter; `sk-this-is-prose` does not.
    Mixed,
    /// Opaque tokens after a bare `bearer` contain a digit; "bearer Responsibility" does not.
    Digit,
}

impl Check {
    /// Whether `secret` passes this check.
    pub(crate) fn accepts(self, secret: &str) -> bool {
        let b = secret.as_bytes();
        match self {
            Check::None => true,
            Check::Mixed => b
                .iter()
                .any(|c| c.is_ascii_digit() || c.is_ascii_uppercase()),
            Check::Digit => b.iter().any(u8::is_ascii_digit),
        }
    }
}

/// One built-in rule. Its regex is compiled the first time one of its triggers occurs: most
/// runs never see most kinds of credential, and compiling all of them up front would cost
/// milliseconds at every start.
#[derive(Debug)]
pub(crate) struct Rule {
    /// The pattern; its last capture group is replaced.
    pattern: String,
    compiled: std::sync::OnceLock<(Regex, usize)>,
    /// Plausibility test on the captured secret.
    pub(crate) check: Check,
}

impl Rule {
    /// The compiled pattern.
    pub(crate) fn regex(&self) -> &Regex {
        &self.compiled().0
    }

    /// Index of the last capture group (the secret).
    pub(crate) fn group(&self) -> usize {
        self.compiled().1
    }

    fn compiled(&self) -> &(Regex, usize) {
        self.compiled.get_or_init(|| {
            // The sources are constants covered by tests; a failure is a programming error.
            let regex = Regex::new(&self.pattern).expect("built-in redaction pattern compiles");
            let group = regex.captures_len() - 1;
            (regex, group)
        })
    }
}

/// Rule sources: (name, regex, check, trigger literals). The name is only for tests and
/// debugging; triggers are case-sensitive, so case-insensitive rules list the usual spellings.
const SOURCES: &[(&str, &str, Check, &[&str])] = &[
    (
        // Anthropic `sk-ant-…` and OpenAI `sk-…`, `sk-proj-…`: the known infix is kept.
        "sk",
        r"(sk-(?:ant-|proj-|svcacct-|admin-)?)([A-Za-z0-9_-]{20,})",
        Check::Mixed,
        &["sk-"],
    ),
    (
        "github",
        r"(gh[pousr]_|github_pat_)([A-Za-z0-9_]{30,})",
        Check::None,
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    ),
    (
        // oneshot's own dashboard secrets (`crate::token`): a token, a sign-in code, a
        // browser session — the kind prefix is kept, the 32 random bytes go.
        "oneshot",
        r"(os[kls]_)([A-Za-z0-9_-]{43})",
        Check::None,
        &["osk_", "osl_", "oss_"],
    ),
    (
        "aws-key-id",
        r"(AKIA|ASIA)([A-Z0-9]{16})\b",
        Check::None,
        &["AKIA", "ASIA"],
    ),
    (
        "aws-secret",
        r#"(?i)(aws_secret_access_key["']?\s*[:=]\s*["']?)([A-Za-z0-9/+=]{40})"#,
        Check::None,
        &["aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"],
    ),
    (
        "slack-token",
        r"(xox[abposr]-)([A-Za-z0-9-]{10,})",
        Check::None,
        &["xox"],
    ),
    (
        "slack-hook",
        // `\/` too: some JSON encoders escape slashes.
        r"(https:\\?/\\?/hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/)([A-Za-z0-9_]+(?:\\?/[A-Za-z0-9_]+)*)",
        Check::None,
        &["hooks.slack.com"],
    ),
    (
        "google",
        r"(AIza)([0-9A-Za-z_-]{35})",
        Check::None,
        &["AIza"],
    ),
    (
        // A whole block; an unterminated block runs to the end of the text (the pipeline then
        // keeps redacting the following lines until the END marker).
        "private-key",
        r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z))",
        Check::None,
        &["PRIVATE KEY"],
    ),
    (
        // A JSON Web Token: base64url header and payload (both JSON objects, so both start
        // with `eyJ`, the encoding of `{"`) and a signature, which may be empty (`alg: none`).
        // The whole token goes: its payload is often as sensitive as its signature.
        "jwt",
        r"(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)",
        Check::None,
        &["eyJ"],
    ),
    (
        // A password in a URL, `scheme://user:password@host`: the scheme, user and `@host`
        // stay readable, the password goes.
        "url-credentials",
        r#"([A-Za-z][A-Za-z0-9+.-]{1,20}://[^:/?#\s@"'<>\\]{0,256}:)([^@/?#\s"'<>\\]{1,256})@"#,
        Check::None,
        &["://"],
    ),
    (
        "authorization-bearer",
        r#"(?i)(authorization["']?\s*[:=]\s*["']?bearer\s+)([A-Za-z0-9._~+/=-]{8,})"#,
        Check::None,
        &["bearer", "Bearer", "BEARER"],
    ),
    (
        "bearer",
        r"(?i)(bearer\s+)([A-Za-z0-9._~+/=-]{16,})",
        Check::Digit,
        &["bearer", "Bearer", "BEARER"],
    ),
];

/// Whether a rule source wants the token-start guard in front of it. The private-key block and
/// the keyword rules are anchored by their own text; short token prefixes are not.
fn wants_start(name: &str) -> bool {
    matches!(
        name,
        "sk" | "github"
            | "aws-key-id"
            | "slack-token"
            | "google"
            | "bearer"
            | "jwt"
            | "url-credentials"
    )
}

/// Compiles the built-in rules and returns them with `(trigger, rule index)` pairs.
pub(crate) fn builtin() -> (Vec<Rule>, Vec<(&'static str, usize)>) {
    let mut rules = Vec::with_capacity(SOURCES.len());
    let mut triggers = Vec::new();
    for (i, (name, src, check, lits)) in SOURCES.iter().enumerate() {
        let pattern = if wants_start(name) {
            format!("{START}{src}")
        } else {
            (*src).to_owned()
        };
        rules.push(Rule {
            pattern,
            compiled: std::sync::OnceLock::new(),
            check: *check,
        });
        triggers.extend(lits.iter().map(|t| (*t, i)));
    }
    (rules, triggers)
}

/// Index of the private-key rule, which the pipeline treats specially across lines.
pub(crate) fn private_key_rule() -> usize {
    SOURCES
        .iter()
        .position(|(name, ..)| *name == "private-key")
        .expect("private-key rule exists")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles_with_a_secret_group() {
        let (rules, triggers) = builtin();
        assert_eq!(rules.len(), SOURCES.len());
        assert!(rules.iter().all(|r| r.group() >= 1));
        assert!(triggers.iter().all(|(_, i)| *i < rules.len()));
    }

    #[test]
    fn checks_reject_prose() {
        assert!(!Check::Mixed.accepts("this-is-not-a-real-key"));
        assert!(Check::Mixed.accepts("abcDEF"));
        assert!(!Check::Digit.accepts("Responsibility"));
        assert!(Check::Digit.accepts("abc1"));
    }
}
