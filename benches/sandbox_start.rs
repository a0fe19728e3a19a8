//! What the sandbox costs an agent's start (issue 34's figure), through the real binary: whole
//! sessions of two trivial command agents — worker `sh -c 'cat >/dev/null'`, auditor
//! `echo VERDICT: DONE` — in a temporary workdir, each session timed from spawning oneshot to
//! its exit, in three configurations alternated run by run (the machine is noisy, so only
//! same-run comparisons mean anything):
//! - `off`: `--sandbox off`, the agents unconfined;
//! - `landlock`: Landlock alone, as where user namespaces are refused
//!   (`ONESHOT_SANDBOX_REFUSE_NAMESPACES=1`);
//! - `namespaces`: the default — user, mount and network namespaces, Landlock inside, the
//!   egress proxy on each agent's own loopback (`--network policy`).
//!
//! It prints p50 and p90 per session for each, and the difference per agent start beside `off`
//! and beside `landlock` (each session starts 2 agents, so half the sessions' p50 difference).
//! The first session of each configuration is checked with `status --json` to have run the
//! sandbox it names, and is not timed.
//!
//! Run: `cargo bench --bench sandbox_start` (release build of the binary; `-- quick` for 10
//! sessions a configuration instead of 30). `ONESHOT_BENCH_BIN=PATH` times another build.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The binary this bench was built with.
const BUILT: &str = env!("CARGO_BIN_EXE_oneshot");

#[derive(Clone, Copy, PartialEq)]
enum Config {
    Off,
    Landlock,
    Namespaces,
}

impl Config {
    const ALL: [Config; 3] = [Config::Off, Config::Landlock, Config::Namespaces];

    fn name(self) -> &'static str {
        match self {
            Config::Off => "--sandbox off",
            Config::Landlock => "landlock alone",
            Config::Namespaces => "namespaces (--network policy)",
        }
    }

    /// The `kind` `status --json` must report.
    fn kind(self) -> &'static str {
        match self {
            Config::Off => "off",
            Config::Landlock => "landlock",
            Config::Namespaces => "namespaces",
        }
    }
}

fn main() {
    let bin = std::env::var("ONESHOT_BENCH_BIN").unwrap_or_else(|_| BUILT.to_owned());
    let quick = std::env::args().any(|a| a == "quick");
    let n = if quick { 10 } else { 30 };
    let dir = tempfile::tempdir().expect("temp dir");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("workdir");
    println!("oneshot sandbox start bench ({bin})");
    println!(
        "{n} sessions a configuration, alternated; each session starts 2 command agents \
         (worker `sh -c 'cat >/dev/null'`, auditor `echo VERDICT: DONE`)\n"
    );
    // One untimed session each, checked to have run the sandbox it names.
    for c in Config::ALL {
        let state = dir.path().join(format!("check-{}", c.kind()));
        session(&bin, dir.path(), &work, &state, c);
        let kind = sandbox_kind(&bin, dir.path(), &state);
        assert_eq!(
            kind,
            c.kind(),
            "{}: the session ran with sandbox {kind:?}",
            c.name()
        );
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); Config::ALL.len()];
    for round in 0..n {
        // The order rotates each round, so no configuration always runs first.
        for k in 0..Config::ALL.len() {
            let i = (round + k) % Config::ALL.len();
            let state = dir.path().join("state");
            let _ = std::fs::remove_dir_all(&state);
            let t = session(&bin, dir.path(), &work, &state, Config::ALL[i]);
            times[i].push(t);
        }
    }
    let p50: Vec<f64> = times.iter_mut().map(|t| pct(t, 0.5)).collect();
    println!(
        "| configuration | session p50 | session p90 | per agent vs off | per agent vs landlock |"
    );
    println!("| --- | --- | --- | --- | --- |");
    for (i, c) in Config::ALL.iter().enumerate() {
        let p90 = pct(&mut times[i], 0.9);
        let vs = |j: usize| {
            if i == j {
                "—".to_string()
            } else {
                format!("{:+.1} ms", (p50[i] - p50[j]) / 2.0)
            }
        };
        println!(
            "| {} | {:.1} ms | {:.1} ms | {} | {} |",
            c.name(),
            p50[i],
            p90,
            vs(0),
            vs(1)
        );
    }
}

/// Runs one session in `work` with its state in `state`; its wall time in ms. Panics with its
/// stderr when it fails.
fn session(bin: &str, root: &Path, work: &Path, state: &Path, c: Config) -> f64 {
    let mut cmd = Command::new(bin);
    cmd.arg("--state-dir")
        .arg(state)
        .arg("-q")
        .arg("--workdir")
        .arg(work)
        .arg("--worker-cmd")
        .arg("sh -c 'cat >/dev/null'")
        .arg("--auditor-cmd")
        .arg("echo VERDICT: DONE");
    match c {
        Config::Off => {
            cmd.arg("--sandbox").arg("off");
        }
        Config::Landlock => {
            cmd.env("ONESHOT_SANDBOX_REFUSE_NAMESPACES", "1");
        }
        Config::Namespaces => {
            cmd.arg("--network").arg("policy");
        }
    }
    cmd.arg("bench task");
    isolate(&mut cmd, root);
    let t0 = Instant::now();
    let out = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("spawn oneshot");
    let t = t0.elapsed().as_secs_f64() * 1e3;
    assert!(
        out.status.success(),
        "{}: oneshot failed: {}",
        c.name(),
        String::from_utf8_lossy(&out.stderr)
    );
    t
}

/// oneshot's own directories (key, trust store, config) under `root`, not the user's.
fn isolate(cmd: &mut Command, root: &Path) {
    let d = |n: &str| -> PathBuf { root.join(n) };
    cmd.env("XDG_STATE_HOME", d("xdg-state"))
        .env("XDG_CONFIG_HOME", d("xdg-config"))
        .env("XDG_DATA_HOME", d("xdg-data"))
        .env_remove("ONESHOT_SANDBOX")
        .env_remove("ONESHOT_NETWORK")
        .env_remove("ONESHOT_STATE_DIR");
}

/// The sandbox `kind` the newest session in `state` ran with, from `status --json`.
fn sandbox_kind(bin: &str, root: &Path, state: &Path) -> String {
    let mut cmd = Command::new(bin);
    cmd.arg("--state-dir")
        .arg(state)
        .arg("status")
        .arg("--json");
    isolate(&mut cmd, root);
    let out = cmd.output().expect("status");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("status --json: {e}: {text}"));
    v["sandbox"]["kind"].as_str().unwrap_or("none").to_string()
}

/// The `q` quantile of `xs` (nearest rank).
fn pct(xs: &mut [f64], q: f64) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let i = ((xs.len() as f64 * q).ceil() as usize).clamp(1, xs.len()) - 1;
    xs[i]
}
