//! Stragglers: processes an agent started that left its process group — a dev server started
//! with `setsid`, a double-forked daemon, Claude Code's Bash tool, which runs in a group of its
//! own. Killing the agent's group does not reach them, so they are found by the mark every
//! agent's environment carries and every descendant inherits: `ONESHOT_SESSION_ID=<id>`. Only
//! one process of a session runs at a time, so once it has ended, anything still carrying the
//! session's mark is left over and is killed — at the end of every run, and when a crashed
//! session is resumed.

/// The environment entry that marks the processes of session `id`.
pub fn mark(id: &str) -> String {
    format!("ONESHOT_SESSION_ID={id}")
}

/// SIGKILLs every process (but this one) whose environment carries session `id`'s mark;
/// returns how many there were. Processes of other users, and those that cleared their
/// environment, cannot be seen.
pub fn sweep(id: &str) -> usize {
    sweep_started_before(id, None)
}

/// [`sweep`], sparing processes started after `cutoff` (clock ticks since boot, as
/// [`ticks_now`] gives): a guard that outlived its oneshot must not kill the agent of a resume
/// that started since.
#[cfg(target_os = "linux")]
pub fn sweep_started_before(id: &str, cutoff: Option<u64>) -> usize {
    if id.is_empty() {
        return 0;
    }
    let mut needle = mark(id).into_bytes();
    needle.push(0);
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut killed = 0;
    for pid in entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
    {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if let Some(cutoff) = cutoff
            && super::start_time(pid as i32).is_none_or(|t| t > cutoff)
        {
            continue;
        }
        // Entries are NUL-terminated; match a whole entry, not a longer id sharing a prefix.
        let whole = environ.starts_with(&needle)
            || memchr::memmem::find_iter(&environ, &needle).any(|at| environ[at - 1] == 0);
        if whole
            && nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            )
            .is_ok()
        {
            killed += 1;
        }
    }
    if killed > 0 {
        tracing::info!(session = id, killed, "killed processes the agent left behind");
    }
    killed
}

/// Off Linux there is no `/proc` to search: nothing is found.
#[cfg(not(target_os = "linux"))]
pub fn sweep_started_before(_id: &str, _cutoff: Option<u64>) -> usize {
    0
}

/// Now, in the unit of a process's start time: clock ticks since boot (`None` off Linux).
pub fn ticks_now() -> Option<u64> {
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    let secs: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some((secs * hz as f64) as u64)
}
