//! Issue 20's planted-secret matrix over every channel a job writes: its task and inputs, a
//! command line (refused: stored redacted, a runner could not run it), a human's feedback, the
//! auditor's critique, the worker's final message (an artifact), the commit message, the audit
//! metadata — grepped across the state dir (the SQLite file's raw bytes included), every branch's
//! history (`git log -p --all`) and everything oneshot printed.

use crate::job_env;
use job_env::{Env, git};

const ANTHROPIC: &str = "sk-ant-api03-Xq9vB2mK7pL4nR8sT1wY6zA3cD5eF0gH";
const GITHUB: &str = "ghp_1234567890abcdefghijABCDEFGHIJ123456";
const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl";
const URL_PASSWORD: &str = "Tr0ub4dor-3x";
const ENV_SECRET: &str = "hunter2-very-secret-value";

/// Every file under `dir`, as bytes.
fn files(dir: &std::path::Path, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push((
                p.display().to_string(),
                std::fs::read(&p).unwrap_or_default(),
            ));
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn no_secret_reaches_the_job_store_git_or_the_terminal() {
    let env = Env::new();
    let mut printed = Vec::new();
    let mut run = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_oneshot"));
        c.arg("--state-dir")
            .arg(env.state_dir())
            .args(args)
            .current_dir(env.repo())
            .env("ONESHOT_ACTOR", "tester")
            .env("DEPLOY_TOKEN", ENV_SECRET)
            .env("NO_COLOR", "1");
        let out = c.output().unwrap();
        printed.extend_from_slice(&out.stdout);
        printed.extend_from_slice(&out.stderr);
        out
    };
    // A command line holding a secret is refused: stored without it, it could not run.
    let refused = run(&[
        "job",
        "create",
        "--worker-cmd",
        &format!("sh -c 'curl -H \"x-api-key: {ANTHROPIC}\" example.com'"),
        "--auditor-cmd",
        "echo VERDICT: DONE",
        "t",
    ]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("holds a secret"));

    // The worker prints secrets of its own (its final message is an artifact) and writes one
    // into a file it commits; the auditor's critique quotes two, then accepts. Scripts outside
    // the repository, so the command lines hold no secret.
    let scripts = env.dir.path();
    let judged = scripts.join("judged");
    std::fs::write(
        scripts.join("w.sh"),
        format!(
            "cat \"$ONESHOT_PROMPT_FILE\" > prompt.txt; echo token {GITHUB} > out.txt\n\
             echo wrote {GITHUB} {JWT}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        scripts.join("a.sh"),
        format!(
            "if [ -f {j} ]; then echo VERDICT: DONE fine; else touch {j}; \
             echo VERDICT: RETRY rotate {ANTHROPIC} and {ENV_SECRET}; fi\n",
            j = judged.display()
        ),
    )
    .unwrap();
    let worker = format!("sh {}", scripts.join("w.sh").display());
    let auditor = format!("sh {}", scripts.join("a.sh").display());
    let created = run(&[
        "job",
        "create",
        "--worker-cmd",
        &worker,
        "--auditor-cmd",
        &auditor,
        "--input",
        &format!("db=postgres://app:{URL_PASSWORD}@db/main"),
        "--activate",
        &format!("deploy with {ANTHROPIC}\nusing {JWT} and {ENV_SECRET}"),
    ]);
    assert!(created.status.success(), "{created:?}");
    let id = String::from_utf8_lossy(&created.stdout).trim().to_string();
    assert!(
        String::from_utf8_lossy(&created.stderr).contains("hold a secret"),
        "{created:?}"
    );
    let step = run(&["job", "run"]);
    assert!(step.status.success(), "{step:?}");
    let rejected = run(&[
        "job",
        "reject",
        &id,
        "--feedback",
        &format!("no: the log shows {GITHUB}"),
    ]);
    assert!(rejected.status.success(), "{rejected:?}");
    assert!(run(&["job", "run"]).status.success());
    for args in [
        vec!["job", "show", id.as_str(), "--json"],
        vec!["job", "audit", id.as_str(), "--json"],
        vec!["job", "list"],
        vec!["job", "diff", id.as_str()],
    ] {
        let out = run(&args);
        assert!(out.status.success(), "{args:?}: {out:?}");
    }
    // The worker was given the task without the secrets.
    let branch = env.branch(&id);
    // Named from the redacted task, `deploy-with-sk-ant-redacted-…` would itself look like a
    // key to the redactor (and be stored mangled): the job id names the branch instead.
    assert_eq!(branch, format!("oneshot/{id}"));
    let given = git(&env.repo(), &["show", &format!("{branch}:prompt.txt")]);
    assert!(given.contains("sk-ant-[REDACTED]"), "{given}");

    let mut everything = Vec::new();
    files(&env.state_dir(), &mut everything);
    assert!(
        everything.iter().any(|(f, _)| f.ends_with("jobs.db")),
        "the store is among what is read"
    );
    let history = git(
        &env.repo(),
        &["log", "-p", "--all", "--format=%H %an %s%n%b"],
    );
    everything.push(("git log -p --all".into(), history.into_bytes()));
    everything.push(("the terminal".into(), printed.clone()));
    for secret in [ANTHROPIC, JWT, ENV_SECRET, URL_PASSWORD] {
        for (what, bytes) in &everything {
            assert!(!contains(bytes, secret), "{secret} reached {what}");
        }
    }
    // What the worker itself wrote into its files is its work, not oneshot's writing: the
    // commit holds it as written. Everything oneshot wrote about it — the store, the commit
    // message, the terminal — does not.
    for (what, bytes) in &everything {
        if what.ends_with("jobs.db") || what == "the terminal" {
            assert!(!contains(bytes, GITHUB), "{GITHUB} reached {what}");
        }
    }
    let subjects = git(&env.repo(), &["log", "--all", "--format=%s%n%b"]);
    assert!(
        !subjects.contains(GITHUB) && !subjects.contains(ANTHROPIC),
        "{subjects}"
    );
}
