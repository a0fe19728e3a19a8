use super::*;

fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
    pairs
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

fn kept_names(f: &Filtered) -> Vec<String> {
    f.kept
        .iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect()
}

fn rules(pass: &[&str], drop: &[&str]) -> EnvRules {
    EnvRules {
        pass: pass.iter().map(|s| s.to_string()).collect(),
        drop: drop.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn glob_matches_stars_anywhere_and_nothing_else() {
    assert!(glob("*TOKEN*", "GITHUB_TOKEN"));
    assert!(glob("*TOKEN*", "TOKEN"));
    assert!(glob("*_KEY", "ANTHROPIC_API_KEY"));
    assert!(!glob("*_KEY", "KEYBOARD"));
    assert!(!glob("*_KEY", "MY_KEYS"));
    assert!(glob("*_KEY_*", "AWS_ACCESS_KEY_ID"));
    assert!(glob("NPM_*", "NPM_"));
    assert!(glob("*", ""));
    assert!(glob("A*B*C", "AxxBxxBxxC"));
    assert!(!glob("A*B*C", "AxxBxxBxxD"));
    assert!(glob("PATH", "PATH"));
    assert!(!glob("PATH", "PATHS"));
    assert!(
        !glob("path", "PATH"),
        "a policy's patterns are case-sensitive"
    );
    assert!(glob("**", "anything"));
    assert!(glob("ÉTÉ_*", "ÉTÉ_X"));
}

#[test]
fn credentials_are_dropped_by_default_and_the_rest_stays() {
    let env = vars(&[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("GITHUB_TOKEN", "ghp_x"),
        ("AWS_ACCESS_KEY_ID", "AKIA"),
        ("AWS_SECRET_ACCESS_KEY", "s"),
        ("AWS_SESSION_TOKEN", "t"),
        ("AWS_PROFILE", "dev"),
        ("AWS_REGION", "eu-west-1"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json"),
        ("AZURE_CLIENT_SECRET", "s"),
        ("SSH_AUTH_SOCK", "/run/ssh"),
        ("GPG_AGENT_INFO", "/run/gpg"),
        ("PGPASSWORD", "p"),
        ("OPENAI_API_KEY", "sk"),
        ("STRIPE_APIKEY", "k"),
        ("KEYBOARD_LAYOUT", "us"),
        ("npm_config__authToken", "x"),
        ("NPM_CONFIG__AUTH", "x"),
        ("LANG", "C.UTF-8"),
    ]);
    let f = filter(env, &EnvRules::default(), &[]);
    assert_eq!(
        kept_names(&f),
        [
            "PATH",
            "HOME",
            "AWS_PROFILE",
            "AWS_REGION",
            "KEYBOARD_LAYOUT",
            "LANG"
        ]
    );
    assert_eq!(
        f.dropped,
        [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AZURE_CLIENT_SECRET",
            "GITHUB_TOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "GPG_AGENT_INFO",
            "NPM_CONFIG__AUTH",
            "OPENAI_API_KEY",
            "PGPASSWORD",
            "SSH_AUTH_SOCK",
            "STRIPE_APIKEY",
            "npm_config__authToken",
        ]
    );
    // Values never appear in what is reported.
    assert!(!f.dropped.iter().any(|n| n.contains("ghp_")));
}

#[test]
fn pass_beats_the_defaults_and_drop_beats_pass() {
    let env = vars(&[
        ("NPM_TOKEN", "n"),
        ("GH_TOKEN", "g"),
        ("GITHUB_TOKEN", "g"),
        ("CI", "1"),
        ("HOME", "/h"),
    ]);
    let f = filter(env, &rules(&["NPM_TOKEN", "G*_TOKEN"], &["GITHUB_*"]), &[]);
    assert_eq!(kept_names(&f), ["NPM_TOKEN", "GH_TOKEN", "CI", "HOME"]);
    assert_eq!(f.dropped, ["GITHUB_TOKEN"]);
}

#[test]
fn drop_wins_even_over_a_pass_naming_the_same_variable() {
    let env = vars(&[("PATH", "/bin"), ("HOME", "/h"), ("EDITOR", "vi")]);
    let f = filter(env, &rules(&["PATH", "HOME"], &["*"]), &[]);
    // `drop` wins over `pass`: a whole-environment drop drops the passed names too.
    assert_eq!(kept_names(&f), Vec::<String>::new());
    assert_eq!(f.dropped, ["EDITOR", "HOME", "PATH"]);
}

#[test]
fn keep_always_stays_and_oneshot_secrets_never_pass() {
    let secret = format!("osk_{}", "a".repeat(43));
    let env = vars(&[
        ("ANTHROPIC_API_KEY", "placeholder"),
        ("ONESHOT_TOKEN", "whatever"),
        ("MY_VAR", &secret),
        ("HTTPS_PROXY", "http://127.0.0.1:9"),
    ]);
    let f = filter(
        env,
        &rules(
            &["ONESHOT_TOKEN", "MY_VAR"],
            &["ANTHROPIC_*", "HTTPS_PROXY"],
        ),
        &["ANTHROPIC_API_KEY", "HTTPS_PROXY"],
    );
    assert_eq!(kept_names(&f), ["ANTHROPIC_API_KEY", "HTTPS_PROXY"]);
    assert_eq!(f.dropped, ["MY_VAR", "ONESHOT_TOKEN"]);
}

#[test]
fn dropped_names_are_sorted_once_each() {
    let env = vars(&[("B_TOKEN", "1"), ("A_TOKEN", "1"), ("B_TOKEN", "2")]);
    let f = filter(env, &EnvRules::default(), &[]);
    assert_eq!(f.dropped, ["A_TOKEN", "B_TOKEN"]);
    assert!(f.kept.is_empty());
}

#[cfg(unix)]
#[test]
fn a_name_that_is_not_utf8_is_matched_as_text_and_reported() {
    use std::os::unix::ffi::OsStringExt;
    let name = OsString::from_vec(b"X_TOKEN_\xff".to_vec());
    let f = filter([(name, OsString::from("v"))], &EnvRules::default(), &[]);
    assert!(f.kept.is_empty());
    assert_eq!(f.dropped, ["X_TOKEN_\u{fffd}"]);
}

#[test]
fn the_real_environment_loses_a_token_set_for_oneshot() {
    // A real process environment, with a credential added the way a user's shell would.
    let mut env: Vec<_> = std::env::vars_os().collect();
    env.push(("GITHUB_TOKEN".into(), "ghp_test".into()));
    let f = filter(env, &EnvRules::default(), &[]);
    assert!(f.dropped.contains(&"GITHUB_TOKEN".to_string()));
    assert!(!f.kept.iter().any(|(k, _)| k == "GITHUB_TOKEN"));
}

#[test]
fn patterns_are_checked() {
    assert_eq!(check_pattern(""), Err(EnvPatternError::Empty));
    assert!(check_pattern("NPM_*").is_ok());
    assert!(check_pattern("*").is_ok());
    let e = check_pattern("A=B").unwrap_err();
    assert!(e.to_string().contains("`A=B`"), "{e}");
    assert!(matches!(
        check_pattern("GH TOKEN"),
        Err(EnvPatternError::BadChar { found: ' ', .. })
    ));
}
