//! The redactor on its own: every built-in kind, look-alikes, literals and policy patterns.

use std::borrow::Cow;

use oneshot::pipeline::{RedactError, Redactor};

fn redactor() -> Redactor {
    Redactor::new(&[], Vec::new()).unwrap()
}

/// Builds fake credentials at run time so this file holds no secret-shaped literal.
fn fake(prefix: &str, body_len: usize) -> String {
    let alphabet = b"aB3xY7kQ9mZ2pL5n";
    let body: String = (0..body_len)
        .map(|i| alphabet[i % alphabet.len()] as char)
        .collect();
    format!("{prefix}{body}")
}

#[test]
fn every_builtin_kind_is_redacted() {
    let r = redactor();
    let cases = [
        (fake("sk-ant-api03-", 80), "sk-ant-[REDACTED]"),
        (fake("sk-", 48), "sk-[REDACTED]"),
        (fake("sk-proj-", 60), "sk-proj-[REDACTED]"),
        (fake("ghp_", 36), "ghp_[REDACTED]"),
        (fake("gho_", 36), "gho_[REDACTED]"),
        (fake("ghu_", 36), "ghu_[REDACTED]"),
        (fake("ghs_", 36), "ghs_[REDACTED]"),
        (fake("ghr_", 36), "ghr_[REDACTED]"),
        (fake("github_pat_11ABC_", 60), "github_pat_[REDACTED]"),
        ("AKIAIOSFODNN7EXAMPLE".to_owned(), "AKIA[REDACTED]"),
        ("ASIAY34FZKBOKMUTVV7A".to_owned(), "ASIA[REDACTED]"),
        (fake("xoxb-1234-", 30), "xoxb-[REDACTED]"),
        (fake("xoxp-", 40), "xoxp-[REDACTED]"),
        (
            fake("https://hooks.slack.com/services/T000/B000/", 24),
            "https://hooks.slack.com/services/[REDACTED]",
        ),
        (fake("AIza", 35), "AIza[REDACTED]"),
    ];
    for (secret, want) in cases {
        let text = format!("before {secret} after");
        assert_eq!(r.redact(&text), format!("before {want} after"), "{secret}");
    }
}

#[test]
fn keyword_secrets_keep_their_keyword() {
    let r = redactor();
    let aws = format!("aws_secret_access_key = {}", fake("", 36) + "/+=Q");
    assert_eq!(r.redact(&aws), "aws_secret_access_key = [REDACTED]");
    let json = format!(r#"{{"AWS_SECRET_ACCESS_KEY": "{}"}}"#, fake("", 40));
    assert_eq!(
        r.redact(&json),
        r#"{"AWS_SECRET_ACCESS_KEY": "[REDACTED]"}"#
    );
    assert_eq!(
        r.redact("Authorization: Bearer abcdefghijkl"),
        "Authorization: Bearer [REDACTED]"
    );
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJl";
    assert_eq!(
        r.redact(&format!("curl -H 'x' bearer {jwt}")),
        "curl -H 'x' bearer [REDACTED]"
    );
}

#[test]
fn private_key_in_one_text_is_redacted_whole() {
    let r = redactor();
    let pem =
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc+/=\n-----END RSA PRIVATE KEY-----";
    assert_eq!(
        r.redact(&format!("key: {pem} done")),
        "key: [REDACTED] done"
    );
    // The same key inside a JSON string, `\n` escaped: redacted, JSON still valid.
    let json = serde_json::to_string(&serde_json::json!({ "content": pem })).unwrap();
    let out = r.redact(&json);
    assert_eq!(out, r#"{"content":"[REDACTED]"}"#);
    // Without its END marker, everything after BEGIN goes.
    assert_eq!(
        r.redact("x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk"),
        "x [REDACTED]"
    );
}

#[test]
fn look_alikes_are_left_alone() {
    let r = redactor();
    for text in [
        "pip install scikit-learn; sk-learn is not a key",
        "sk-this-is-not-a-real-key-at-all",
        "task-1234567890abcdefghijklmnop",
        "ghp_short",
        "AKIAEXAMPLE",
        "xoxb-",
        "AIzaShort",
        "the bearer of bad news and the bearer Responsibility",
        "aws_secret_access_key = <your key here>",
        "-----BEGIN PUBLIC KEY-----",
        "a plain line with nothing secret in it",
    ] {
        assert!(matches!(r.redact(text), Cow::Borrowed(_)), "{text}");
    }
}

#[test]
fn secret_after_a_json_escape_is_found() {
    let r = redactor();
    let key = fake("sk-ant-api03-", 40);
    let json = format!(r#"{{"content":"HOME=/root\n{key}\ttab"}}"#);
    let out = r.redact(&json);
    assert_eq!(out, r#"{"content":"HOME=/root\nsk-ant-[REDACTED]\ttab"}"#);
    serde_json::from_str::<serde_json::Value>(&out).unwrap();
}

#[test]
fn literal_values_are_redacted_and_short_ones_ignored() {
    let r = Redactor::new(&[], vec!["hunter2-horse-staple".into(), "true".into()]).unwrap();
    assert_eq!(
        r.redact("password is hunter2-horse-staple, flag is true"),
        "password is [REDACTED], flag is true"
    );
}

#[test]
fn environment_secrets_are_picked_up() {
    // SAFETY: this is the only test in this binary that touches the environment, and the
    // variable name is unique to it.
    unsafe { std::env::set_var("ONESHOT_TEST_API_TOKEN", "tok-9f8e7d6c5b4a") };
    let r = Redactor::from_env(&[]).unwrap();
    assert_eq!(r.redact("got tok-9f8e7d6c5b4a back"), "got [REDACTED] back");
}

#[test]
fn policy_patterns_are_applied_and_checked() {
    let r = Redactor::new(&[r"internal-[0-9a-f]{8}".into(), "CORP\\d+".into()], vec![]).unwrap();
    assert_eq!(
        r.redact("ids internal-deadbeef and CORP42"),
        "ids [REDACTED] and [REDACTED]"
    );
    let err = Redactor::new(&["(unclosed".into()], vec![]).unwrap_err();
    assert!(matches!(err, RedactError::Pattern { .. }));
    assert_eq!(err.to_string(), "compile redact pattern \"(unclosed\"");
    // The regex error is the cause, printed once by whoever prints the chain.
    let text = oneshot::error::chain(&err);
    assert_eq!(text.matches("unclosed group").count(), 1, "{text}");
}

#[test]
fn escaped_slashes_in_a_slack_hook_are_handled() {
    let r = redactor();
    let hook = r#"{"url":"https:\/\/hooks.slack.com\/services\/T0001\/B0002\/XyZ123abc"}"#;
    assert_eq!(
        r.redact(hook),
        r#"{"url":"https:\/\/hooks.slack.com\/services\/[REDACTED]"}"#
    );
}

#[test]
fn debug_output_does_not_show_the_secrets() {
    let r = Redactor::new(&[], vec!["hunter2-horse-staple".into()]).unwrap();
    let shown = format!("{r:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("literals: 1"));
}

/// JSON Web Tokens go whole; a password in a URL goes, its scheme, user and host stay.
#[test]
fn jwts_and_url_passwords_are_redacted() {
    let r = redactor();
    // Built at run time: header and payload are base64url JSON, so both start with `eyJ`.
    let jwt = format!("{}.{}.{}", fake("eyJ", 30), fake("eyJ", 60), fake("", 43));
    assert_eq!(
        r.redact(&format!("Authorization: Bearer {jwt}")),
        "Authorization: Bearer [REDACTED]"
    );
    assert_eq!(
        r.redact(&format!(r#"{{"token":"{jwt}"}}"#)),
        r#"{"token":"[REDACTED]"}"#
    );
    // `alg: none` tokens have an empty signature.
    let unsigned = format!("{}.{}.", fake("eyJ", 20), fake("eyJ", 20));
    assert_eq!(r.redact(&format!("t={unsigned} end")), "t=[REDACTED] end");

    let pass = fake("", 12);
    for (url, want) in [
        (
            format!("https://deploy:{pass}@git.example.com/repo.git"),
            "https://deploy:[REDACTED]@git.example.com/repo.git",
        ),
        (
            format!("postgres://app:{pass}@db:5432/main"),
            "postgres://app:[REDACTED]@db:5432/main",
        ),
        (
            format!(r#"{{"url":"redis://:{pass}@cache:6379"}}"#),
            r#"{"url":"redis://:[REDACTED]@cache:6379"}"#,
        ),
    ] {
        assert_eq!(r.redact(&url), want, "{url}");
    }
    // Look-alikes stay: a URL without credentials, a port, an e-mail address, prose.
    for text in [
        "see https://example.com:8443/path?a=b@c",
        "mailto:someone@example.com",
        "eyJust a word. eyJoke. done",
        "ssh://git@github.com/org/repo",
    ] {
        assert_eq!(r.redact(text), text, "{text}");
    }
}
