//! The guard: a small process that outlives oneshot long enough to clean up after it.
//!
//! `kill -9` gives oneshot no chance to stop its agent: the direct child dies with it (its
//! parent-death signal), but whatever the agent started lives on — in its process group, or
//! outside it (`setsid`, a double fork, Claude Code's Bash tool). So while a session runs, a
//! guard — this same binary, started in its own session, deaf to the terminal's signals —
//! waits on a pipe from oneshot. The pipe closes when oneshot's process ends, however it ends;
//! the guard then kills every process that carries the session's mark
//! (`ONESHOT_SESSION_ID=<id>`, inherited by everything the agents start) and exits. After a
//! normal end there is nothing left to find.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The environment variable that makes this binary a guard for the session it names.
pub const GUARD_ENV: &str = "ONESHOT_GUARD_SESSION";
/// The session's lock file, for the guard to see whether a resume drives the session again.
const LOCK_ENV: &str = "ONESHOT_GUARD_LOCK";
/// The pid of the oneshot the guard watches.
const PARENT_ENV: &str = "ONESHOT_GUARD_PARENT";

/// Starts the guard for `session_id`; its stdin is the pipe whose end it waits for. `None` (with
/// a warning) when it cannot be started: the session runs without it.
pub fn start(session_id: &str, lock: &std::path::Path) -> Option<Child> {
    let exe = std::env::current_exe().ok()?;
    let mut cmd = Command::new(exe);
    cmd.arg0("oneshot-guard")
        .env(GUARD_ENV, session_id)
        .env(LOCK_ENV, lock)
        .env(PARENT_ENV, std::process::id().to_string())
        // The guard must not carry the mark it sweeps for.
        .env_remove("ONESHOT_SESSION_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: between fork and exec only async-signal-safe calls: setsid and signal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
                libc::signal(sig, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    match cmd.spawn() {
        Ok(child) => Some(child),
        Err(e) => {
            errln!(
                "oneshot: warning: failed to start the guard that cleans up if oneshot is \
                 killed: {e}; the session runs without it"
            );
            None
        }
    }
}

/// Stops the guard after a normal end: closing its pipe makes it sweep (finding nothing) and
/// exit; it is reaped here so no zombie is left.
pub fn stop(mut guard: Child) {
    drop(guard.stdin.take());
    let _ = guard.wait();
}

/// The guard's life, when this binary was started as one: wait for oneshot's end, then sweep.
pub fn run(session_id: &str) -> ! {
    // Our oneshot (named by it: after its death our parent is someone else).
    let oneshot_pid = std::env::var(PARENT_ENV)
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        .unwrap_or_else(std::os::unix::process::parent_id);
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin().lock();
    // Returns at end of file (oneshot gone) or on an error (the same, as far as we can tell).
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    // Only what was started while oneshot lived, and only while nobody drives the session
    // again: a resume fences and sweeps by itself, and its agents are not ours to kill. (One
    // tick of margin: start times are coarse.)
    let cutoff = oneshot::engine::ticks_now().map(|t| t + 1);
    let lock = std::env::var_os(LOCK_ENV).map(std::path::PathBuf::from);
    // The lock still names our oneshot while it is being torn down (its pipes close before it
    // is a zombie): only another holder is a resume.
    let resumed = || {
        lock.as_deref()
            .and_then(oneshot::store::live_holder)
            .is_some_and(|pid| pid != oneshot_pid)
    };
    // Processes may still be forking while they are killed: sweep until none is left.
    for _ in 0..20 {
        if resumed() || oneshot::engine::sweep_started_before(session_id, cutoff) == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::process::exit(0)
}
