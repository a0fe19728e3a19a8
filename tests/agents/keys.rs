//! The model API key never enters the sandbox: a Claude worker run by oneshot holds a
//! placeholder (in its environment and in every file it can read), oneshot's proxy adds the
//! real key on the way to the model API, and the session's tokens are the API's own count.

use super::harness::Sandbox;
use super::with_oneshot::{LIMIT, oneshot, state};
use crate::fake_model::{FakeModel, Reply};

/// A key nothing but oneshot's own environment holds.
const REAL_KEY: &str = "sk-ant-real-key-4471-never-inside";

#[test]
fn a_claude_worker_never_holds_the_real_key_and_its_tokens_are_the_apis() {
    if oneshot::sandbox::available().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI allows user namespaces"
        );
        eprintln!("skipped: no user namespaces here");
        return;
    }
    let sb = Sandbox::new();
    // The tool looks everywhere the agent can: its own environment, its parent's (Claude's),
    // and every file under its home, temp and work directories (the key's text
    // split in the command, so the transcript of the command itself does not hold it).
    let probe = "env > env.txt; xargs -0 -n1 < /proc/$PPID/environ > parent.txt; \
                 grep -rl 'key-44''71' \"$HOME\" \"$TMPDIR\" . 2>/dev/null > found.txt; echo probed";
    let model = FakeModel::with([
        Reply::Bash(probe.into()),
        Reply::Text("probed the environment".into()),
    ]);
    let Some(mut claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    claude.env("ANTHROPIC_API_KEY", REAL_KEY);
    let mut c = oneshot(&sb, &[&claude]);
    c.args(["--worker", "claude"])
        .args(["--auditor-cmd", "echo VERDICT: done", "look around"]);
    let r = super::harness::run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let read = |name: &str| std::fs::read_to_string(sb.work().join(name)).unwrap();
    let (env, parent) = (read("env.txt"), read("parent.txt"));
    for (what, text) in [("the tool's environment", &env), ("Claude's", &parent)] {
        assert!(!text.contains(REAL_KEY), "the real key in {what}:\n{text}");
        assert!(
            text.contains("ANTHROPIC_API_KEY=oneshot-proxy-holds-the-key"),
            "{what}:\n{text}"
        );
        assert!(
            text.contains("ANTHROPIC_BASE_URL=http://127.0.0.1:3128"),
            "{what}:\n{text}"
        );
    }
    assert_eq!(read("found.txt").trim(), "", "files holding the key");
    keyed_and_counted(&sb, &model, "x-api-key", REAL_KEY);
}

/// The model API got `value` in `header` on every request (the real key, never the
/// placeholder), and the session's tokens are its `usage`: each fake response counts 100
/// input and 20 output tokens.
fn keyed_and_counted(sb: &Sandbox, model: &FakeModel, header: &str, value: &str) {
    let requests = model.model_requests();
    assert!(!requests.is_empty());
    for req in &requests {
        let key = req
            .credentials
            .0
            .iter()
            .find(|(n, _)| n == header)
            .map(|(_, v)| v.as_str());
        assert_eq!(key, Some(value), "{:?}", req.path);
    }
    let s = state(sb);
    let tokens = s["spent"]["tokens"].as_u64().unwrap_or_default();
    assert_eq!(tokens, 120 * requests.len() as u64, "{s}");
}

/// Codex's key, held the same way: its provider's base URL is set to the proxy by a `-c`
/// override after the user's own, its `env_key` variable holds the placeholder, and the model
/// API gets the real key as a bearer token.
#[test]
fn a_codex_worker_never_holds_the_real_key_and_its_tokens_are_the_apis() {
    if oneshot::sandbox::available().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI allows user namespaces"
        );
        eprintln!("skipped: no user namespaces here");
        return;
    }
    const KEY: &str = "sk-codex-real-key-5582-never-inside";
    let sb = Sandbox::new();
    // Codex runs the tool below itself: the environment of every ancestor the tool can read
    // (Codex's own among them), and every file under the home, temp and work directories.
    let probe = "p=$$; for i in 1 2 3 4 5 6; do p=$(cut -d' ' -f4 /proc/$p/stat); \
                 [ \"$p\" -gt 1 ] || break; echo \"--- $(cat /proc/$p/comm)\" >> anc.txt; \
                 tr '\\0' '\\n' < /proc/$p/environ >> anc.txt 2>/dev/null; done; \
                 grep -rl 'key-55''82' \"$HOME\" \"${TMPDIR:-/tmp}\" . 2>/dev/null > found.txt; \
                 echo probed";
    let model = FakeModel::with([
        Reply::Bash(probe.into()),
        Reply::Text("probed the environment".into()),
    ]);
    let Some(mut codex) = super::codex::codex(&sb, &model) else {
        return;
    };
    codex.env("FAKE_API_KEY", KEY);
    let mut c = oneshot(&sb, &[&codex]);
    c.args(["--worker", "codex:gpt-5.5"])
        .args(super::with_oneshot::role_args(
            "worker",
            &super::with_oneshot::codex_overrides(&codex),
        ))
        .args(["--auditor-cmd", "echo VERDICT: done", "look around"]);
    let r = super::harness::run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let read = |name: &str| std::fs::read_to_string(sb.work().join(name)).unwrap();
    let ancestors = read("anc.txt");
    assert!(!ancestors.contains(KEY), "the real key:\n{ancestors}");
    assert!(
        ancestors.contains("FAKE_API_KEY=oneshot-proxy-holds-the-key"),
        "{ancestors}"
    );
    assert_eq!(read("found.txt").trim(), "", "files holding the key");
    keyed_and_counted(&sb, &model, "authorization", &format!("Bearer {KEY}"));
}
