//! Running oneshot with the real agent CLIs in a sandbox, and reading what a session left: the
//! helpers every whole-session test of `tests/agents/` shares.

use super::harness::Sandbox;
use crate::fake_model::{FakeModel, Reply};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

pub(super) const LIMIT: Duration = Duration::from_secs(120);

/// `oneshot` in the sandbox, with the environment the agent commands were given (their
/// provider URLs and keys reach the agents through oneshot, as a user's would), its state in
/// the sandbox, and the CLI binaries named by `ONESHOT_<AGENT>_BIN`.
pub(super) fn oneshot(sb: &Sandbox, agents: &[&Command]) -> Command {
    let mut c = sb.command(Path::new(env!("CARGO_BIN_EXE_oneshot")));
    for a in agents {
        for (k, v) in a.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        let bin = a.get_program().to_string_lossy().into_owned();
        let name = Path::new(&bin)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_uppercase();
        c.env(format!("ONESHOT_{name}_BIN"), &bin);
    }
    c.arg("--state-dir").arg(sb.tmp.path().join("state"));
    c
}

/// The one session's directory.
pub(super) fn session_dir(sb: &Sandbox) -> std::path::PathBuf {
    let dir = sb.tmp.path().join("state/sessions");
    std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.path().join("oneshot.json").is_file())
        .expect("a session directory")
        .path()
}

/// The one session's log records.
pub(super) fn log_records(sb: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(session_dir(sb).join("oneshot-log.json"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// The one session's state file.
pub(super) fn state(sb: &Sandbox) -> Value {
    let text = std::fs::read_to_string(session_dir(sb).join("oneshot.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The reason of the state file's last history entry: why the session ended.
pub(super) fn last_reason(s: &Value) -> Value {
    s["history"]
        .as_array()
        .and_then(|h| h.last())
        .map_or(Value::Null, |e| e["reason"].clone())
}

/// The `args` as `--NAME-arg=…` words (one each, so values starting with `-` are kept).
pub(super) fn role_args(role: &str, args: &[String]) -> Vec<String> {
    args.iter().map(|a| format!("--{role}-arg={a}")).collect()
}

/// Aider's arguments for the fake model: its model name, no git, whole-file edits.
pub(super) fn aider_args() -> Vec<String> {
    [
        "--model",
        "openai/fake-model",
        "--no-git",
        "--edit-format",
        "whole",
    ]
    .map(String::from)
    .to_vec()
}

/// The timeline of every worker run's stdout in the session's log, read as `protocol`.
pub(super) fn worker_timeline(
    sb: &Sandbox,
    protocol: oneshot::agent::Protocol,
) -> oneshot::agent::Timeline {
    let mut parser = protocol.parser();
    let mut events = Vec::new();
    for record in log_records(sb) {
        if record["type"] == "activity"
            && record["stream"] == "stdout"
            && record["role"] == "worker"
        {
            parser.feed_str(&record["data"].to_string(), &mut events);
        }
    }
    let mut timeline = oneshot::agent::Timeline::new();
    for e in &events {
        timeline.apply(e);
    }
    timeline
}

/// The `-c` overrides of a codex command built by the codex module.
pub(super) fn codex_overrides(c: &Command) -> Vec<String> {
    c.get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

pub(super) fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Starts oneshot with `agent` as worker (its commands made by `agents` for the sandbox and a
/// model whose first reply runs `sleep` with a marker), waits until the tool runs, then lets
/// `act` hit oneshot; no process of the marker may survive, and the session ends in
/// `expect_state` when given. Returns the sandbox for more checks (`None`: CLI not installed).
pub(super) fn tool_then(
    agent: &str,
    agents: impl FnOnce(&Sandbox, &FakeModel) -> Option<Vec<Command>>,
    act: impl FnOnce(u32),
    expect_state: Option<&str>,
) -> Option<Sandbox> {
    let marker = format!(
        "sleep 300.{}{}{}",
        std::process::id(),
        agent.len(),
        expect_state.is_some() as u8
    );
    let sb = Sandbox::new();
    let model = FakeModel::with([Reply::Bash(marker.clone()), Reply::Text("done".into())]);
    let commands = agents(&sb, &model)?;
    let mut c = oneshot(&sb, &commands.iter().collect::<Vec<_>>());
    c.args(["--worker", agent, "--auditor-cmd", "echo VERDICT: done"]);
    if agent.starts_with("codex") {
        c.args(role_args("worker", &codex_overrides(&commands[0])));
    }
    c.arg("sleep");
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    let mut child = c.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while super::containment::pids_with(&marker).is_empty() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the tool never ran: {}", log_text(&sb));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    act(child.id());
    let status = child.wait().unwrap();
    // Whatever is left gets 3 s to go; then it is killed here (so a failure leaks nothing) and
    // the test fails.
    let gone = std::time::Instant::now() + Duration::from_secs(3);
    while !super::containment::pids_with(&marker).is_empty() && std::time::Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = super::containment::pids_with(&marker);
    for pid in &left {
        super::containment::kill(*pid, false);
    }
    assert!(
        left.is_empty(),
        "left running: {left:?} (oneshot: {status:?})"
    );
    if let Some(state) = expect_state {
        assert_eq!(state_of(&sb), state);
    }
    Some(sb)
}

/// The one session's log as text (empty when there is none yet).
pub(super) fn log_text(sb: &Sandbox) -> String {
    let dir = sb.tmp.path().join("state/sessions");
    walk(&dir)
        .into_iter()
        .filter(|p| p.ends_with("oneshot-log.json"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

pub(super) fn state_of(sb: &Sandbox) -> String {
    state(sb)["state"].as_str().unwrap_or_default().to_string()
}
