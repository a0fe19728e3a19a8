//! oneshot measured where users feel it: the real binary, beside a plain baseline in the same
//! run (the machine is noisy, so only same-run comparisons mean anything).
//!
//! - **throughput**: as a user runs it — from the project directory holding the stream,
//!   `oneshot --worker-cmd "cat stream.ndjson" --auditor-cmd "echo VERDICT: DONE" TASK` with
//!   the default state dir on the same disk; 500,000 Claude-like stream-json lines (1% carrying
//!   a secret), redaction and the durable NDJSON log on; whole-process wall time, CPU and peak
//!   RSS, beside the durable floor (`cat | dd conv=fdatasync`) and a page-cache `cat > F` in
//!   the same rounds (see `binary/throughput.rs`).
//! - **start**: from spawning oneshot to its worker running, beside spawning the same worker
//!   directly.
//! - **trickle CPU**: a worker printing a 500-byte line every 10 ms for a few seconds; oneshot's
//!   own CPU time (all its threads, from `/proc/PID/task/*/schedstat`) as a share of one core,
//!   beside `cat` relaying the same trickle.
//! - **agent stream**: a Claude worker (`--worker claude`, this executable as a fake
//!   `ONESHOT_CLAUDE_BIN`) streaming partial-message stream-json, a line every 10 ms for a few
//!   seconds; oneshot's own CPU (all its threads) as a share of one core, beside `cat` relaying
//!   the same stream at the same pace.
//! - **list/status**: `oneshot list` and `oneshot status` over 1,000 sessions.
//!
//! Run: `cargo bench --bench binary` (release build of the binary; `-- quick` for fewer rounds;
//! `-- agent` for the agent stream case alone, `-- throughput` for the throughput case alone).
//! `ONESHOT_BENCH_BIN=PATH` times another build of oneshot instead (an older one, to compare).
//! The throughput case's files go under the build's target dir (`CARGO_TARGET_TMPDIR`), on the
//! disk it is on, or under `ONESHOT_BENCH_DIR`; the other cases use a temporary directory.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/generator.rs"]
mod generator;
#[path = "binary/throughput.rs"]
mod throughput;
use generator::ENV_SECRET;

/// The binary this bench was built with.
const BUILT: &str = env!("CARGO_BIN_EXE_oneshot");
const LINES: u64 = 500_000;
/// Set in the environment of this executable when it runs as the trickling agent.
const TRICKLE: &str = "ONESHOT_BENCH_TRICKLE";
const TRICKLE_LINE: usize = 500;
const TRICKLE_EVERY: Duration = Duration::from_millis(10);
const SESSIONS: usize = 1000;
/// Set in the environment of this executable when it runs as the fake Claude Code.
const FAKE_CLAUDE: &str = "ONESHOT_BENCH_FAKE_CLAUDE";
/// How long the fake Claude streams.
const AGENT_SECONDS: u64 = 5;

fn main() {
    if let Ok(spec) = std::env::var(TRICKLE) {
        trickle(&spec);
        return;
    }
    if let Ok(spec) = std::env::var(FAKE_CLAUDE) {
        fake_claude(&spec);
        return;
    }
    let chosen = std::env::var("ONESHOT_BENCH_BIN").unwrap_or_else(|_| BUILT.to_owned());
    BIN.set(chosen).expect("set once");
    let quick = std::env::args().any(|a| a == "quick");
    let only_agent = std::env::args().any(|a| a == "agent");
    let only_throughput = std::env::args().any(|a| a == "throughput");
    let only_trickle = std::env::args().any(|a| a == "trickle");
    let rounds = if quick { 3 } else { 7 };
    let dir = tempfile::tempdir().expect("temp dir");
    println!("oneshot binary bench ({})", bin());
    if only_agent {
        println!("median of 3 rounds; the baseline ran in the same rounds, interleaved\n");
        agent_cpu(dir.path(), AGENT_SECONDS, 3);
        return;
    }
    if only_trickle {
        println!("median of 3 rounds; the baseline ran in the same rounds, interleaved\n");
        trickle_cpu(dir.path(), 3, 3);
        return;
    }
    println!("median of {rounds} rounds; the baseline ran in the same rounds, interleaved\n");
    {
        // The log must reach a disk: under the target dir (or ONESHOT_BENCH_DIR), not in /tmp,
        // which may be a tmpfs.
        let base = std::env::var_os("ONESHOT_BENCH_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
        fs::create_dir_all(&base).expect("bench base dir");
        let on_disk = tempfile::tempdir_in(&base).expect("temp dir on disk");
        throughput::throughput(on_disk.path(), rounds);
    }
    if only_throughput {
        return;
    }
    start(dir.path(), rounds * 3);
    trickle_cpu(dir.path(), 3, if quick { 1 } else { 3 });
    agent_cpu(dir.path(), AGENT_SECONDS, if quick { 1 } else { 3 });
    listing(dir.path(), rounds);
}

/// The binary being timed: [`BUILT`] unless `ONESHOT_BENCH_BIN` names another.
static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The oneshot binary being timed.
fn bin() -> &'static str {
    BIN.get().map(String::as_str).unwrap_or(BUILT)
}

/// A oneshot command with its own state dir, quiet, worker and auditor as given.
fn oneshot(dir: &Path, worker: &str, auditor: &str) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("--state-dir")
        .arg(dir.join("state"))
        .arg("-q")
        .arg("--workdir")
        .arg(dir)
        .arg("--worker-cmd")
        .arg(worker)
        .arg("--auditor-cmd")
        .arg(auditor)
        .arg("bench task")
        // A secret in the environment, so the literal matcher is on as it would be for a user.
        .env("BENCH_DB_PASSWORD", ENV_SECRET)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `cmd` to completion: wall time and peak RSS (KiB) of it and its reaped children.
fn timed(cmd: &mut Command) -> (Duration, u64) {
    let (t, usage) = timed_usage(cmd);
    (t, usage.ru_maxrss as u64)
}

/// Runs `cmd` to completion: wall time and the resource usage of it and its reaped children
/// (CPU time, peak RSS in KiB); panics with its stderr if it fails.
// The child is reaped by `wait4` (for its resource usage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn timed_usage(cmd: &mut Command) -> (Duration, libc::rusage) {
    let t = Instant::now();
    let child = cmd.spawn().expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data, zero is a valid value; `pid` is our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let elapsed = t.elapsed();
    assert_eq!(waited, pid, "wait4");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr {
        let _ = e.read_to_string(&mut stderr);
    }
    let status = std::process::ExitStatus::from_raw(status);
    assert!(status.success(), "{cmd:?} failed: {status}\n{stderr}");
    (elapsed, usage)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn start(dir: &Path, rounds: usize) {
    let mark = dir.join("started");
    // The worker notes the time it runs at (CLOCK_REALTIME in ns); `date` costs the same in both.
    let worker = format!("sh -c 'date +%s%N > {}'", mark.display());
    let (mut direct, mut ours) = (Vec::new(), Vec::new());
    let since = |t0: std::time::SystemTime| {
        let ns: u128 = fs::read_to_string(&mark)
            .expect("start mark")
            .trim()
            .parse()
            .expect("ns");
        let t0 = t0.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        (ns.saturating_sub(t0)) as f64 / 1e6
    };
    for _ in 0..rounds {
        let t0 = std::time::SystemTime::now();
        timed(
            Command::new("sh")
                .arg("-c")
                .arg(format!("date +%s%N > {}", mark.display()))
                .stderr(Stdio::piped()),
        );
        direct.push(since(t0));
        let _ = fs::remove_dir_all(dir.join("state"));
        let t0 = std::time::SystemTime::now();
        timed(&mut oneshot(dir, &worker, "echo 'VERDICT: DONE'"));
        ours.push(since(t0));
    }
    let _ = fs::remove_dir_all(dir.join("state"));
    println!("start: from spawning the command to the worker running ({rounds} rounds)");
    println!(
        "  {:<44} {:>9.1} ms",
        "sh -c 'date' directly",
        median(direct.clone())
    );
    println!(
        "  {:<44} {:>9.1} ms",
        "oneshot, to its worker",
        median(ours.clone())
    );
    println!(
        "  {:<44} {:>9.1} ms",
        "oneshot's own share",
        median(ours) - median(direct)
    );
    println!();
}

fn trickle_cpu(dir: &Path, seconds: u64, rounds: usize) {
    let exe = std::env::current_exe().expect("bench executable");
    let report = dir.join("trickle.txt");
    let share = |path: &Path| -> f64 {
        fs::read_to_string(path)
            .expect("trickle report")
            .trim()
            .parse()
            .expect("a share")
    };
    let (mut cat_shares, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        // Baseline: the same trickle relayed by `cat` into /dev/null, cat's CPU measured.
        let mut cat = cat_to_null();
        let cat_pid = cat.id();
        let status = Command::new(&exe)
            .env(TRICKLE, format!("{seconds}:{cat_pid}:{}", report.display()))
            .stdout(cat.stdin.take().expect("cat stdin"))
            .status()
            .expect("run trickle");
        assert!(status.success());
        cat.wait().expect("wait cat");
        cat_shares.push(share(&report));
        // oneshot: the trickle is its worker and measures its parent.
        let worker = format!(
            "env {TRICKLE}={seconds}:parent:{} '{}'",
            report.display(),
            exe.display()
        );
        let _ = fs::remove_dir_all(dir.join("state"));
        timed(&mut oneshot(dir, &worker, "echo 'VERDICT: DONE'"));
        ours.push(share(&report));
    }
    let _ = fs::remove_dir_all(dir.join("state"));
    println!(
        "trickle: a {TRICKLE_LINE}-byte line every {} ms for {seconds} s; CPU as a share of one core ({rounds} rounds)",
        TRICKLE_EVERY.as_millis()
    );
    println!("  {:<44} {:>9.2} %", "cat relaying it", median(cat_shares));
    println!("  {:<44} {:>9.2} %", "oneshot (all threads)", median(ours));
    println!();
}

/// oneshot, from the agent's parent: on Linux that is oneshot's reaper (its comm says so),
/// whose parent is oneshot.
fn oneshot_above(parent: u32) -> u32 {
    let comm = fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
    if comm.trim() != "oneshot-reaper" {
        return parent;
    }
    let stat = fs::read_to_string(format!("/proc/{parent}/stat")).expect("the reaper's stat");
    let after_name = &stat[stat.rfind(')').expect("stat has a name") + 1..];
    after_name
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("the reaper's parent")
}

/// The `SECONDS:PID|parent` head of a fake agent's spec; `parent` is the oneshot above the
/// reaper that started it.
fn seconds_and_pid<'a>(parts: &mut impl Iterator<Item = &'a str>) -> (u64, u32) {
    let seconds = parts.next().and_then(|s| s.parse().ok()).expect("seconds");
    let pid = match parts.next().expect("pid") {
        "parent" => oneshot_above(std::os::unix::process::parent_id()),
        p => p.parse().expect("pid"),
    };
    (seconds, pid)
}

/// The trickling agent: `SECONDS:PID|parent:REPORT`. Prints a line every 10 ms and writes the
/// CPU share of PID (all its threads) over that time to REPORT.
fn trickle(spec: &str) {
    let mut parts = spec.splitn(3, ':');
    let (seconds, pid) = seconds_and_pid(&mut parts);
    let report = PathBuf::from(parts.next().expect("report path"));
    let line = format!(
        "{{\"type\":\"stream_event\",\"text\":\"{}\"}}\n",
        "x".repeat(TRICKLE_LINE - 35)
    );
    let mut out = std::io::stdout().lock();
    let cpu0 = cpu_ns(pid);
    let t0 = Instant::now();
    let mut next = t0;
    while t0.elapsed() < Duration::from_secs(seconds) {
        out.write_all(line.as_bytes()).expect("write");
        out.flush().expect("flush");
        next += TRICKLE_EVERY;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    // Let the last line be handled before the final reading.
    std::thread::sleep(Duration::from_millis(100));
    let share = (cpu_ns(pid) - cpu0) as f64 / t0.elapsed().as_nanos() as f64 * 100.0;
    fs::write(report, format!("{share:.2}")).expect("write report");
}

/// The baseline relay: `cat` from a pipe into /dev/null (its pid is what gets measured).
fn cat_to_null() -> std::process::Child {
    Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn cat")
}

/// Nanoseconds on CPU of every thread of `pid` so far.
fn cpu_ns(pid: u32) -> u64 {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).expect("task dir");
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// The real Claude Code lines (system/init, a whole `assistant` text line, the `result`) the
/// fake Claude's stream is built from.
const CLAUDE_SAMPLE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/agents/samples/claude-hello.stream.jsonl"
));

/// The pieces the fake Claude's text arrives in (a delta of a few tokens, as the API sends).
const DELTAS: &[&str] = &[
    "I'll start by ",
    "running the failing ",
    "test to see ",
    "the actual error, ",
    "then read `parse_line` ",
    "in src/lib.rs. ",
    "The panic comes from ",
    "an unchecked index ",
    "when the line ends ",
    "in a backslash; ",
    "the fix is to ",
    "check the length first ",
    "and return `None`.\n\n",
    "```rust\nif i + 1 >= bytes.len() ",
    "{\n    return None;\n}\n```\n",
];

/// Text deltas per streamed message.
const DELTAS_PER_TURN: usize = 40;

/// The sample's own session id, message id and text, replaced in its lines (which keep the
/// key order Claude prints them in).
const SAMPLE_SESSION: &str = "55975777-c2da-48af-af98-873c6f8e8c99";
const SAMPLE_MESSAGE: &str = "msg_bec144a1792142f28cccb25b";
const SAMPLE_TEXT: &str = "\"Hello from the fake model. (request had 2 messages)\"";
const SAMPLE_UUID: &str = "14894b6d-bf2e-414d-8bf4-19fe4eb9c4e3";

/// Line `n` of the sample with its session id replaced by `session`.
fn sample_line(n: usize, session: &str) -> String {
    CLAUDE_SAMPLE
        .lines()
        .nth(n)
        .expect("a sample line")
        .replace(SAMPLE_SESSION, session)
}

/// The fake Claude's stdout after its system/init line: partial-message turns, as many as the
/// caller takes (it stops at a turn's end).
struct ClaudeTurns {
    session: String,
    assistant: String,
    turn: usize,
    uuid: usize,
}

impl ClaudeTurns {
    fn new(session: &str) -> ClaudeTurns {
        ClaudeTurns {
            session: session.to_owned(),
            assistant: sample_line(1, session),
            turn: 0,
            uuid: 0,
        }
    }

    fn uuid(&mut self) -> String {
        self.uuid += 1;
        format!("{:08x}-51c4-4b8e-9d0a-{:012x}", self.uuid, self.turn)
    }

    /// A `stream_event` line around `event` (a JSON object's text), keys in Claude's order.
    fn event(&mut self, event: &str) -> String {
        let uuid = self.uuid();
        format!(
            r#"{{"type":"stream_event","event":{event},"session_id":"{}","parent_tool_use_id":null,"uuid":"{}"}}"#,
            self.session, uuid
        )
    }

    /// One model turn: `message_start`, a text block in many deltas (a `ping` among them),
    /// `content_block_stop`, the whole `assistant` line, `message_delta`, `message_stop`.
    fn next_turn(&mut self) -> Vec<String> {
        self.turn += 1;
        let id = format!("msg_{:024x}", 0xbe_c144_a179_2142_u64 + self.turn as u64);
        let mut lines = vec![
            self.event(&format!(
                r#"{{"type":"message_start","message":{{"id":"{id}","type":"message","role":"assistant","model":"claude-opus-4-8","content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}}}}"#
            )),
            self.event(r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
        ];
        let mut text = String::new();
        for (k, delta) in DELTAS
            .iter()
            .cycle()
            .skip(self.turn % DELTAS.len())
            .take(DELTAS_PER_TURN)
            .enumerate()
        {
            text.push_str(delta);
            let delta = serde_json::to_string(delta).expect("a JSON string");
            lines.push(self.event(&format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{delta}}}}}"#
            )));
            if k == DELTAS_PER_TURN / 2 {
                lines.push(self.event(r#"{"type":"ping"}"#));
            }
        }
        lines.push(self.event(r#"{"type":"content_block_stop","index":0}"#));
        let uuid = self.uuid();
        lines.push(
            self.assistant
                .replace(SAMPLE_MESSAGE, &id)
                .replace(SAMPLE_TEXT, &serde_json::to_string(&text).expect("JSON"))
                .replace(SAMPLE_UUID, &uuid),
        );
        lines.push(self.event(
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":420}}"#,
        ));
        lines.push(self.event(r#"{"type":"message_stop"}"#));
        lines
    }
}

/// The fake Claude Code (`ONESHOT_CLAUDE_BIN`): `SECONDS:PID|parent:SESSION:REPORT`. Ignores
/// its flags; reads the `initialize` control request and the user turn from stdin, answers the
/// first, streams partial-message turns a line every 10 ms for SECONDS (to a turn's end), writes
/// the CPU share of PID (all its threads) over that time to REPORT, prints the `result`, and
/// exits 0 at the end of its input, as Claude does.
fn fake_claude(spec: &str) {
    use std::io::BufRead;
    let mut parts = spec.splitn(4, ':');
    let (seconds, pid) = seconds_and_pid(&mut parts);
    let session = parts.next().expect("session id").to_owned();
    let report = PathBuf::from(parts.next().expect("report path"));
    let mut input = std::io::stdin().lock();
    let mut read = |what: &str| -> serde_json::Value {
        let mut line = String::new();
        input.read_line(&mut line).expect("read stdin");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what} line {line:?}: {e}"))
    };
    let init = read("initialize");
    assert_eq!(init["request"]["subtype"], "initialize", "{init}");
    let user = read("user");
    assert_eq!(user["type"], "user", "{user}");
    let mut out = std::io::stdout().lock();
    let mut send = |line: &str| {
        out.write_all(line.as_bytes()).expect("write");
        out.write_all(b"\n").expect("write");
        out.flush().expect("flush");
    };
    let cpu0 = cpu_ns(pid);
    let t0 = Instant::now();
    send(
        &serde_json::json!({"type": "control_response", "response": {"subtype": "success",
            "request_id": init["request_id"],
            "response": {"commands": [], "output_style": "default",
                "available_output_styles": ["default"]}}})
        .to_string(),
    );
    send(&sample_line(0, &session));
    let mut turns = ClaudeTurns::new(&session);
    let mut next = Instant::now();
    while t0.elapsed() < Duration::from_secs(seconds) {
        for line in turns.next_turn() {
            next += TRICKLE_EVERY;
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
            send(&line);
        }
    }
    // Let the last line be handled before the final reading.
    std::thread::sleep(Duration::from_millis(100));
    let share = (cpu_ns(pid) - cpu0) as f64 / t0.elapsed().as_nanos() as f64 * 100.0;
    fs::write(report, format!("{share:.2}")).expect("write report");
    let result = sample_line(2, &session)
        .replace(&format!(r#""result":{SAMPLE_TEXT}"#), r#""result":"done""#)
        .replace(
            r#""num_turns":1"#,
            &format!(r#""num_turns":{}"#, turns.turn),
        );
    assert!(
        result.contains(r#""result":"done""#),
        "the sample's result replaced"
    );
    send(&result);
    // Claude ends at the end of its input.
    std::io::copy(&mut input, &mut std::io::sink()).expect("read to the end");
}

fn agent_cpu(dir: &Path, seconds: u64, rounds: usize) {
    let exe = std::env::current_exe().expect("bench executable");
    // The report is written outside the agent's workdir (no changed file in the session).
    let report = dir.join("agent.txt");
    let work = dir.join("agent-work");
    fs::create_dir_all(&work).expect("agent workdir");
    let share = |path: &Path| -> f64 {
        fs::read_to_string(path)
            .expect("agent report")
            .trim()
            .parse()
            .expect("a share")
    };
    // What oneshot writes first on Claude's stdin, for the baseline's fake.
    let stdin_lines = concat!(
        r#"{"type":"control_request","request_id":"init","request":{"subtype":"initialize"}}"#,
        "\n",
        r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"bench task"}]},"parent_tool_use_id":null,"session_id":"default"}"#,
        "\n"
    );
    let (mut cat_shares, mut ours) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let session = format!("b3f1c0de-7a2e-4c55-9e1a-{round:012x}");
        // Baseline: the same stream relayed by `cat` into /dev/null, cat's CPU measured.
        let mut cat = cat_to_null();
        let cat_pid = cat.id();
        let mut fake = Command::new(&exe)
            .env(
                FAKE_CLAUDE,
                format!("{seconds}:{cat_pid}:{session}:{}", report.display()),
            )
            .stdin(Stdio::piped())
            .stdout(cat.stdin.take().expect("cat stdin"))
            .spawn()
            .expect("run the fake claude");
        let mut to_fake = fake.stdin.take().expect("fake stdin");
        to_fake
            .write_all(stdin_lines.as_bytes())
            .expect("write the fake's input");
        drop(to_fake);
        assert!(fake.wait().expect("wait the fake").success());
        cat.wait().expect("wait cat");
        cat_shares.push(share(&report));
        // oneshot: the fake is its Claude worker and measures its parent.
        let state = dir.join("state");
        let _ = fs::remove_dir_all(&state);
        timed(
            Command::new(bin())
                .arg("--state-dir")
                .arg(&state)
                .arg("-q")
                .arg("--workdir")
                .arg(&work)
                .args(["--worker", "claude"])
                .args(["--auditor-cmd", "echo 'VERDICT: DONE'"])
                .arg("bench task")
                .env("ONESHOT_CLAUDE_BIN", &exe)
                .env(
                    FAKE_CLAUDE,
                    format!("{seconds}:parent:{session}:{}", report.display()),
                )
                .env("BENCH_DB_PASSWORD", ENV_SECRET)
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        );
        ours.push(share(&report));
        verify_agent_session(&state, &session);
    }
    let _ = fs::remove_dir_all(dir.join("state"));
    println!(
        "agent stream: a fake Claude worker streaming partial-message stream-json, a line every {} ms for {seconds} s; CPU as a share of one core ({rounds} rounds)",
        TRICKLE_EVERY.as_millis()
    );
    println!("  {:<44} {:>9.2} %", "cat relaying it", median(cat_shares));
    println!(
        "  {:<44} {:>9.2} %",
        "oneshot --worker claude (all threads)",
        median(ours)
    );
    println!();
}

/// oneshot parsed the fake's stream: the session completed and holds the Claude session id
/// the fake printed.
fn verify_agent_session(state: &Path, session: &str) {
    let dir = fs::read_dir(state.join("sessions"))
        .expect("sessions dir")
        .next()
        .expect("one session")
        .expect("entry")
        .path();
    let v: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("oneshot.json")).expect("read state"))
            .expect("state json");
    assert_eq!(v["state"], "COMPLETED", "the session completed: {v}");
    assert_eq!(
        v["agents"]["worker_session"], session,
        "oneshot read the Claude session id"
    );
}

fn listing(dir: &Path, rounds: usize) {
    let state = dir.join("state");
    let _ = fs::remove_dir_all(&state);
    let seeds = seed_sessions(dir, &state);
    let sessions = state.join("sessions");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut bytes = 0;
    for i in seeds.len()..SESSIONS {
        let seed = &seeds[i % seeds.len()];
        let id = format!("{:08x}-0000-4000-8000-{:012x}", i, i);
        let to = sessions.join(&id);
        fs::create_dir_all(&to).expect("session dir");
        // Creation times spread over the last week, each copy its seed's duration long (an
        // older oneshot's state file, timed for comparison, may lack the millisecond fields).
        let mut v: serde_json::Value =
            serde_json::from_slice(&fs::read(seed.join("oneshot.json")).expect("read seed"))
                .expect("seed state");
        let ms = |key: &str| v[key].as_u64();
        let took = ms("updated_ms")
            .zip(ms("created_ms"))
            .map_or(0, |(u, c)| u - c);
        let created = now - (i as u64 * 7919 % SESSIONS as u64) * 600_000 - i as u64;
        v["oneshot_id"] = id.clone().into();
        if v.get("created_ms").is_some() {
            v["created_ms"] = created.into();
            v["updated_ms"] = (created + took).into();
        }
        let text = serde_json::to_vec(&v).expect("state json");
        bytes += text.len();
        fs::write(to.join("oneshot.json"), text).expect("write state");
        fs::copy(seed.join("oneshot-log.json"), to.join("oneshot-log.json")).expect("log");
        // Last changed when the session last was, as a real session directory.
        let when = std::time::UNIX_EPOCH + Duration::from_millis(created + took);
        for path in [to.join("oneshot.json"), to.clone()] {
            fs::File::open(&path)
                .and_then(|f| f.set_modified(when))
                .expect("set mtime");
        }
    }
    println!(
        "listing: {SESSIONS} sessions (state files {} KiB on average: long task, 64 KiB tails, up to 50 history entries)",
        bytes / (SESSIONS - seeds.len()) / 1024
    );
    let newest = String::from_utf8(
        Command::new(bin())
            .arg("--state-dir")
            .arg(&state)
            .args(["list", "--json"])
            .output()
            .expect("list")
            .stdout,
    )
    .expect("utf-8");
    let newest: serde_json::Value =
        serde_json::from_str(newest.lines().next().expect("a session")).expect("list json");
    let newest = newest["session_id"].as_str().expect("id").to_owned();
    let cases: [&[&str]; 5] = [
        &["--version"],
        &["list"],
        &["list", "--json"],
        &["status"],
        &["status", &newest],
    ];
    for args in cases {
        let mut times = Vec::new();
        for _ in 0..rounds * 2 {
            let (t, _) = timed(
                Command::new(bin())
                    .arg("--state-dir")
                    .arg(&state)
                    .args(args)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped()),
            );
            times.push(t.as_secs_f64() * 1e3);
        }
        let label = match args {
            ["--version"] => "baseline: oneshot --version (start-up alone)".to_owned(),
            ["status", _] => "oneshot status ID".to_owned(),
            _ => format!("oneshot {}", args.join(" ")),
        };
        println!("  {label:<44} {:>9.1} ms", median(times));
    }
    let _ = fs::remove_dir_all(&state);
}

/// A few real sessions, run by the binary: a long multi-line task with quotes and braces, a
/// worker printing ~80 KB, 1, 5 and 12 iterations (histories of 5 to 50 entries), COMPLETED,
/// FAILED and REJECTED. Returns their directories.
fn seed_sessions(dir: &Path, state: &Path) -> Vec<PathBuf> {
    let work = dir.join("seed-work");
    fs::create_dir_all(&work).expect("seed workdir");
    let policy = dir.join("twelve.lua");
    fs::write(&policy, "return { limits = { max_iterations = 12 } }").expect("policy");
    // Done at the 5th audit, a retry before that.
    let audit5 = dir.join("audit5.sh");
    fs::write(
        &audit5,
        r#"n=$(cat count 2>/dev/null || echo 0); n=$((n + 1)); echo $n > count
if [ $n -ge 5 ]; then echo 'VERDICT: DONE all "checks" pass {ok}'; else echo "VERDICT: RETRY attempt $n: the parser still rejects '}' in "strings""; fi
"#,
    )
    .expect("audit script");
    let mut task = String::from(
        "Fix the JSON parser so that it accepts \"quoted\" keys and } inside strings.\n\n",
    );
    for i in 1..=40 {
        task.push_str(&format!(
            "- requirement {i}: handle {{\"key\": \"value with }} and \\\"escapes\\\"\"}} without losing data\n"
        ));
    }
    let worker = "sh -c 'seq 1 2000 | sed \"s/^/line of worker output, a realistic length /\"'";
    let audit5 = format!("sh {}", audit5.display());
    let runs: [(&str, &str, Option<&Path>, &str); 4] = [
        (worker, "echo 'VERDICT: DONE looks good'", None, &task),
        (worker, &audit5, Some(&policy), &task),
        (
            worker,
            "echo 'VERDICT: RETRY the \"parser\" still fails on {x}'",
            Some(&policy),
            &task,
        ),
        (
            "echo short",
            "echo 'VERDICT: IMPOSSIBLE no such file'",
            None,
            "a short task",
        ),
    ];
    for (worker, auditor, policy, task) in runs {
        let _ = fs::remove_file(work.join("count"));
        let mut cmd = Command::new(bin());
        cmd.arg("--state-dir")
            .arg(state)
            .arg("-q")
            .arg("--workdir")
            .arg(&work)
            .arg("--worker-cmd")
            .arg(worker)
            .arg("--auditor-cmd")
            .arg(auditor);
        if let Some(p) = policy {
            cmd.arg("--policy").arg(p);
        }
        // FAILED and REJECTED sessions exit non-zero; only the session matters here.
        cmd.arg(task)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("seed run");
    }
    let seeds: Vec<PathBuf> = fs::read_dir(state.join("sessions"))
        .expect("seed sessions")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(seeds.len(), 4, "every seed run made a session");
    seeds
}
