//! `oneshot token`: tokens made once and kept hashed, listed, revoked, their sign-in links —
//! and no agent ever given one (no agent can approve its own work), through the real binary.

use std::process::Command;

use crate::job_env;
use job_env::Env;

fn fails(env: &Env, args: &[&str]) -> (i32, String) {
    let out = env.oneshot(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_token_is_printed_once_stored_hashed_listed_and_revoked() {
    let env = Env::new();
    let token = env.ok(&["token", "create", "--name", "ana", "--scope", "approve"]);
    let token = token.trim();
    assert!(
        token.starts_with("osk_") && token.len() == 4 + 43,
        "{token}"
    );
    let db = std::fs::read(env.state_dir().join("jobs.db")).unwrap();
    let found = |needle: &[u8]| db.windows(needle.len()).any(|w| w == needle);
    assert!(
        !found(token.as_bytes()) && !found(&token.as_bytes()[4..]),
        "the store holds the token itself"
    );

    let (code, e) = fails(
        &env,
        &["token", "create", "--name", "ana", "--scope", "read"],
    );
    assert_eq!(code, 2, "{e}");
    assert!(e.contains("exists already"), "{e}");
    let (code, e) = fails(
        &env,
        &["token", "create", "--name", "x", "--scope", "write"],
    );
    assert_eq!(code, 2);
    assert!(e.contains("unknown scope \"write\""), "{e}");
    let (code, e) = fails(
        &env,
        &["token", "create", "--name", "a b", "--scope", "read"],
    );
    assert_eq!(code, 2);
    assert!(e.contains("token name \"a b\""), "{e}");

    env.ok(&["token", "create", "--name", "ci", "--scope", "read,operate"]);
    let rows: Vec<serde_json::Value> = env
        .ok(&["token", "list", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["name"], "ana");
    assert_eq!(rows[0]["scopes"], serde_json::json!(["approve"]));
    assert_eq!(rows[0]["created_by"], "tester");
    assert_eq!(rows[1]["scopes"], serde_json::json!(["read", "operate"]));
    assert!(rows[0]["revoked_at"].is_null());

    let link = env.ok(&[
        "token",
        "login",
        "ana",
        "--url",
        "http://dash.example:9000/",
    ]);
    assert!(
        link.trim()
            .starts_with("http://dash.example:9000/login/osl_"),
        "{link}"
    );
    env.ok(&["token", "revoke", "ana"]);
    let rows = env.ok(&["token", "list", "--json"]);
    assert!(!rows.lines().next().unwrap().contains("\"revoked_at\":null"));
    let (code, e) = fails(&env, &["token", "login", "ana"]);
    assert_eq!(code, 2);
    assert!(
        e.contains("no token named \"ana\" that is not revoked"),
        "{e}"
    );
    let (code, _) = fails(&env, &["token", "revoke", "nobody"]);
    assert_eq!(code, 2);
}

/// A worker and an auditor started by a runner see neither `ONESHOT_TOKEN` nor a variable
/// that holds a token or a sign-in link under another name; other variables pass.
#[test]
fn no_agent_is_given_a_token_or_a_sign_in_link() {
    let env = Env::new();
    let token = env.ok(&["token", "create", "--name", "ana", "--scope", "approve"]);
    let token = token.trim().to_string();
    let link = env.ok(&["token", "login", "ana"]).trim().to_string();
    let dump = env.dir.path().join("seen");
    std::fs::create_dir_all(&dump).unwrap();
    let worker = format!(
        "sh -c 'env > {}/worker.env; echo hi > f.txt'",
        dump.display()
    );
    let auditor = format!(
        "sh -c 'env > {}/auditor.env; echo VERDICT: DONE'",
        dump.display()
    );
    let id = env.create(&worker, &auditor, &["--activate"]);
    let out = with_secrets(env.command(&["job", "step", &id]), &token, &link)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for who in ["worker", "auditor"] {
        let seen = std::fs::read_to_string(dump.join(format!("{who}.env"))).unwrap();
        assert!(seen.contains("PLAIN_VAR=kept"), "{who}: {seen}");
        for (what, secret) in [("the token", token.as_str()), ("the link", link.as_str())] {
            assert!(!seen.contains(secret), "{who} saw {what}");
        }
        assert!(
            !seen.contains("osk_") && !seen.contains("osl_"),
            "{who}: {seen}"
        );
        for name in ["ONESHOT_TOKEN=", "DASH_TOKEN_COPY=", "DASH_LINK="] {
            assert!(!seen.contains(name), "{who} saw {name}");
        }
    }
}

fn with_secrets(mut c: Command, token: &str, link: &str) -> Command {
    c.env("ONESHOT_TOKEN", token)
        .env("DASH_TOKEN_COPY", token)
        .env("DASH_LINK", link)
        .env("PLAIN_VAR", "kept");
    c
}
