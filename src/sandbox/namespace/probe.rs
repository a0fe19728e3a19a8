//! Finding out, once per process, whether agents can have namespaces of their own here.

use super::{Plan, enter};

/// Whether this process may give its agents namespaces of their own: a throwaway child tries
/// the same user, mount and network namespaces (and the nested pair) and reports. Asked once
/// per process; `Err` says why not, as the kernel did.
pub fn available() -> Result<(), String> {
    static PROBED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    PROBED.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    if std::env::var_os("ONESHOT_SANDBOX_REFUSE_NAMESPACES").is_some_and(|v| !v.is_empty()) {
        return Err("refused by ONESHOT_SANDBOX_REFUSE_NAMESPACES".into());
    }
    let plan = Plan {
        ops: Vec::new(),
        network: true,
        forwards: Vec::new(),
    };
    let p = plan.prepare().map_err(|e| e.to_string())?;
    // SAFETY: the child makes async-signal-safe calls only and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: in the forked child, as `enter` requires.
        let code = match unsafe { enter(&p) } {
            Ok(()) => 0,
            Err(e) => e.raw_os_error().unwrap_or(255).clamp(1, 255),
        };
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waiting for the child just forked.
    while unsafe { libc::waitpid(pid, &mut status, 0) } == -1 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(format!("waitpid: {}", std::io::Error::last_os_error()));
        }
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else if libc::WIFEXITED(status) {
        Err(format!(
            "user namespaces refused: {}",
            std::io::Error::from_raw_os_error(libc::WEXITSTATUS(status))
        ))
    } else {
        Err("the namespace probe was killed".into())
    }
}
