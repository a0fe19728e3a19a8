//! Where a CLI's tool processes live, which decides how an executor must stop them: Claude
//! Code's Bash tool leaves Claude's process group, so killing the group orphans it.

use super::harness::Sandbox;
use crate::fake_model::{FakeModel, Reply};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// (pgrp, session) of `pid`, from /proc/PID/stat (fields after the parenthesised command name).
pub(super) fn pgrp_and_session(pid: i32) -> Option<(i32, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    Some((f[2].parse().ok()?, f[3].parse().ok()?))
}

/// The pids whose command line contains `needle` (a marker unique to one test).
pub(super) fn pids_with(needle: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(needle)
                })
                .unwrap_or(false)
        })
        .collect()
}

pub(super) fn kill(pid: i32, group: bool) {
    // SAFETY: kill(2) on a process (group) this test started; no memory involved.
    unsafe {
        libc::kill(if group { -pid } else { pid }, libc::SIGKILL);
    }
}

/// Sends `signal` to the process `pid` alone.
pub(super) fn kill_with(pid: i32, signal: i32) {
    // SAFETY: kill(2) on a process this test started; no memory involved.
    unsafe {
        libc::kill(pid, signal);
    }
}

#[test]
fn claude_bash_tool_runs_outside_claudes_process_group() {
    // A unique duration marks our tool process among everything else on the machine.
    let marker = format!("sleep 29{}.{}", std::process::id() % 10, std::process::id());
    let model = FakeModel::with([Reply::Bash(marker.clone()), Reply::Text("done".into())]);
    let sb = Sandbox::new();
    let Some(mut c) = super::claude::claude(&sb, &model) else {
        return;
    };
    c.args([
        "-p",
        "run it",
        "--output-format",
        "stream-json",
        "--verbose",
    ])
    .args(["--allowedTools", "Bash"])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .process_group(0);
    let mut child = c.spawn().unwrap();
    let claude = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(30);
    let tool = loop {
        if let Some(&pid) = pids_with(&marker).iter().find(|&&p| p != claude) {
            break pid;
        }
        assert!(Instant::now() < deadline, "the Bash tool never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    let (tool_pgrp, _) = pgrp_and_session(tool).expect("tool stat");
    kill(claude, true);
    let _ = child.wait();
    std::thread::sleep(Duration::from_millis(200));
    let survived = pgrp_and_session(tool).is_some();
    // Clean up whatever outlived the group kill before asserting.
    kill(tool_pgrp, true);
    kill(tool, false);
    assert_ne!(
        tool_pgrp, claude,
        "the Bash tool has a process group of its own"
    );
    assert!(
        survived,
        "SIGKILL of Claude's group leaves the Bash tool running"
    );
}
