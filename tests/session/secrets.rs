//! Secrets printed by an agent reach no file: redaction happens before anything touches disk.

use crate::common;
use common::*;

const ANTHROPIC: &str = "sk-ant-api03-Xq9vB2mK7pL4nR8sT1wY6zA3cD5eF0gH";
const GITHUB: &str = "ghp_1234567890abcdefghijABCDEFGHIJ123456";
const ENV_SECRET: &str = "hunter2-very-secret-value";

fn all_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            all_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn a_secret_printed_by_the_worker_appears_in_no_file() {
    let w = World::new();
    let worker = w.script(
        "w.sh",
        &format!(
            "echo 'key: {ANTHROPIC}'; echo '{{\"type\":\"assistant\",\"token\":\"{GITHUB}\"}}'; \
             echo \"db password is $DEPLOY_PASSWORD\" >&2; \
             printf -- '-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIBAAKCAQEA1234\\nabcdSECRETBODY\\n-----END RSA PRIVATE KEY-----\\n'; \
             exit 1"
        ),
    );
    let auditor = w.script(
        "a.sh",
        &format!("echo 'VERDICT: RETRY you leaked {ANTHROPIC} and {ENV_SECRET}'"),
    );
    let policy = w.policy(
        "return { limits = { max_iterations = 1 }, salvage = function() return 'success' end }",
    );
    let out = w
        .cmd()
        .env("DEPLOY_PASSWORD", ENV_SECRET)
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor])
        .args(["--policy", &policy])
        .arg("t")
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", text(&out));
    let mut files = Vec::new();
    all_files(&w.state_dir(), &mut files);
    assert!(files.len() >= 2, "{files:?}");
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let s = String::from_utf8_lossy(&bytes);
        for secret in [
            ANTHROPIC,
            GITHUB,
            ENV_SECRET,
            "abcdSECRETBODY",
            "MIIEpAIBAAKCAQEA1234",
        ] {
            assert!(
                !s.contains(secret),
                "{secret} leaked into {}:\n{s}",
                f.display()
            );
        }
    }
    // The relay to the terminal is redacted too.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains(ANTHROPIC) && !stdout.contains(GITHUB),
        "{stdout}"
    );
    // The log still holds valid JSON, with the JSON line embedded as an object.
    let id = w.session_id();
    let log = w.log(&id);
    assert!(
        log.iter()
            .any(|r| r["type"] == "activity" && r["data"]["type"] == "assistant"),
        "JSON output is embedded as JSON"
    );
}

/// Every channel oneshot writes to, one planted secret each: the task, a command line, a policy's
/// `print`, `oneshot.log`, its error message, a hook's reason and prompt, and `policy replay`.
/// No file, no terminal line, no replay report holds any of them.
#[test]
fn a_secret_reaches_no_file_and_no_terminal_line_through_any_channel() {
    let w = World::new();
    let jwt = format!(
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{}",
        "Sf1KxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    );
    let url = "postgres://app:s3cr3t-Passw0rd@db.internal:5432/main";
    let policy = w.policy(&format!(
        r#"return {{
          verdict = function(output, ctx)
            print("print {ANTHROPIC}")
            oneshot.log("warn", "log {GITHUB}")
            return "done", "reason {jwt}"
          end,
          audit_prompt = function(ctx) return "check {url}" end,
          on_transition = function(from, to, ctx)
            if to == "AUDIT_PENDING" then error("boom {ANTHROPIC}") end
          end,
        }}"#
    ));
    let auditor = w.script("a.sh", AUDIT_DONE);
    let worker = format!("sh -c 'echo work; true {GITHUB}'");
    let out = w
        .cmd()
        .env("DEPLOY_PASSWORD", ENV_SECRET)
        .args([
            "-v",
            "--policy",
            &policy,
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            &auditor,
        ])
        .arg(format!("deploy with {ENV_SECRET} and {url}"))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    let replay = w
        .cmd()
        .env("DEPLOY_PASSWORD", ENV_SECRET)
        .args(["policy", "replay", &id, "--policy", &policy])
        .output()
        .unwrap();
    let mut files = Vec::new();
    all_files(&w.state_dir(), &mut files);
    let mut everything: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            (
                f.display().to_string(),
                std::fs::read_to_string(f).unwrap_or_default(),
            )
        })
        .collect();
    everything.push(("run output".into(), text(&out)));
    everything.push(("replay output".into(), text(&replay)));
    for secret in [ANTHROPIC, GITHUB, ENV_SECRET, &jwt, "s3cr3t-Passw0rd"] {
        for (what, content) in &everything {
            assert!(!content.contains(secret), "{secret} leaked into {what}");
        }
    }
    // The command line lost its secret on disk, and the user was told.
    assert!(
        text(&out).contains("command line holds a secret"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("[REDACTED]"),
        "the policy's messages are shown, redacted"
    );
}

/// A session whose command line held a secret is not resumed with the redacted line: the
/// refusal says why and what to do.
#[test]
fn a_command_line_that_held_a_secret_is_not_resumed_blindly() {
    let w = World::new();
    let marker = w.tmp.path().join("started");
    let worker = format!(
        "sh -c 'touch {}; sleep 30; true {GITHUB}'",
        marker.display()
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "t");
    w.wait_for(&marker, std::time::Duration::from_secs(10));
    signal(child.id(), libc::SIGTERM);
    wait_timeout(&mut child, std::time::Duration::from_secs(15));
    let id = w.session_id();
    let out = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("held a secret"), "{}", text(&out));
    assert!(!text(&out).contains(GITHUB));
}

/// A file named after a secret: the snapshot, the state file and the log keep its redacted
/// name, and the change is still detected.
#[test]
fn file_names_holding_a_secret_are_stored_redacted() {
    let w = World::new();
    std::fs::write(w.work().join(format!("old-{GITHUB}.txt")), "x").unwrap();
    let worker = w.script("w.sh", &format!("echo new > 'new-{ANTHROPIC}.txt'; exit 1"));
    let auditor = w.script("a.sh", AUDIT_DONE);
    let policy = w.policy(
        "return { limits = { max_iterations = 1 }, salvage = function(e) return 'success', table.concat(e.changed_files, ',') end }",
    );
    let out = w.run(&worker, &auditor, &["--policy", &policy], "t");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    let mut files = Vec::new();
    all_files(&w.state_dir(), &mut files);
    for f in &files {
        let content = std::fs::read_to_string(f).unwrap_or_default();
        for secret in [ANTHROPIC, GITHUB] {
            assert!(
                !content.contains(secret),
                "{secret} leaked into {}",
                f.display()
            );
        }
    }
    let changed = w.session(&id).changed_files;
    assert_eq!(
        changed,
        vec!["new-sk-ant-[REDACTED].txt".to_string()],
        "{changed:?}"
    );
}

/// Ten kinds of secret, one of each, that a policy puts into the prompts it returns
/// (`next_prompt`, `audit_prompt`): none reaches the state dir — the state file keeps the prompts
/// redacted (every state file write takes a `Redacted` session) — and the agents are given the
/// prompts as stored.
#[test]
fn secrets_a_policy_puts_into_prompts_reach_no_file() {
    let w = World::new();
    let secrets = [
        ANTHROPIC.to_string(),
        GITHUB.to_string(),
        "AKIAIOSFODNN7EXAMPLE".to_string(),
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_string(),
        "xoxb-123456789012-abcdefABCDEF".to_string(),
        "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX".to_string(),
        "AIzaSyA1234567890abcdefghijklmnopqrstuv".to_string(),
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl".to_string(),
        "https://deploy:Tr0ub4dor-3@git.example.com/repo".to_string(),
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"
            .to_string(),
    ];
    let lua_list = secrets
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let policy = w.policy(&format!(
        r#"local S = {{ {lua_list} }}
        return {{
          limits = {{ max_iterations = 2 }},
          next_prompt = function(ctx) return "again with " .. table.concat(S, " ; ") end,
          audit_prompt = function(ctx) return "audit with " .. table.concat(S, " ; ") end,
        }}"#
    ));
    // The worker and the auditor keep what they were given, outside the state dir.
    let seen = w.tmp.path().join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    let worker = w.script(
        "w.sh",
        &format!(
            "cat \"$ONESHOT_PROMPT_FILE\" >> {}/worker; echo ok",
            seen.display()
        ),
    );
    let auditor = w.script(
        "a.sh",
        &format!(
            "cat \"$ONESHOT_PROMPT_FILE\" >> {}/auditor; echo 'VERDICT: RETRY more'",
            seen.display()
        ),
    );
    let out = w.run(&worker, &auditor, &["--policy", &policy], "t");
    assert_eq!(code(&out), 1, "{}", text(&out));
    let mut files = Vec::new();
    all_files(&w.state_dir(), &mut files);
    let given = |who: &str| std::fs::read_to_string(seen.join(who)).unwrap();
    for secret in &secrets {
        // The secret's telling part (a private key's body, a password).
        let part = match secret.as_str() {
            s if s.contains("PRIVATE KEY") => "MIIEowIBAAKCAQEA7",
            s if s.contains("Tr0ub4dor") => "Tr0ub4dor-3",
            s if s.starts_with("aws_secret") => "wJalrXUtnFEMI",
            s if s.contains("hooks.slack") => "XXXXXXXXXXXX",
            s => s,
        };
        for f in &files {
            let content = std::fs::read_to_string(f).unwrap_or_default();
            assert!(
                !content.contains(part),
                "{part} leaked into {}",
                f.display()
            );
        }
        assert!(
            !given("worker").contains(part),
            "{part} given to the worker"
        );
        assert!(
            !given("auditor").contains(part),
            "{part} given to the auditor"
        );
        assert!(!text(&out).contains(part), "{part} on the terminal");
    }
    assert!(
        given("worker").contains("again with sk-ant-[REDACTED]"),
        "{}",
        given("worker")
    );
    assert!(
        given("auditor").contains("audit with sk-ant-[REDACTED]"),
        "{}",
        given("auditor")
    );
}
