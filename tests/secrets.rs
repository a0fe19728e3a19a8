//! Secrets printed by an agent reach no file: redaction happens before anything touches disk.

mod common;
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
