//! The reaper between oneshot and an agent (Linux): a process that outlives oneshot's death
//! long enough to kill every descendant of the agent, wherever it went.
//!
//! Killing the agent's process group misses what left the group (`setsid`, a double fork,
//! Claude Code's Bash tool), and the environment mark [`super::sweep`] looks for misses what
//! cleared its environment (`env -i`). Both still descend from the agent, and on Linux a
//! *child subreaper* inherits every orphan below it. So the spawned child splits in two between
//! fork and exec: the agent (which execs the command) and, as its parent, the shim — a
//! subreaper that never execs. It waits for the agent; when the agent has exited it gives the
//! agent's children [`LINGER`] to end on their own (they may still be writing output), then
//! kills whatever is left below it and exits with the agent's status. When told to (SIGUSR2:
//! oneshot's hard kill) or when oneshot dies (its parent-death signal is SIGUSR2 too) it kills
//! the agent and everything below it at once. The agent gets SIGKILL as its parent-death
//! signal, so it never outlives the shim.
//!
//! The shim is the process oneshot spawned: it leads the agent's process group, so a graceful
//! stop (SIGTERM to the group) reaches the agent while the shim ignores it, and the recorded
//! identity (pid, pgid, start time) is the shim's. The code runs in a forked copy of a
//! multi-threaded process, so it only makes async-signal-safe system calls and never allocates.

use libc::{c_int, pid_t};
use std::ffi::CStr;

/// How long the agent's children may go on after it exited before they are killed (nextest's
/// `detect_fd_leaks` idea: they may still be flushing output into the pipes).
const LINGER_MS: i64 = 300;
/// Poll step while lingering and while killing.
const STEP_MS: i64 = 5;
/// The longest the shim sleeps while the agent runs (signals wake it; this is only a backstop).
const IDLE_MS: i64 = 60_000;
/// How long the shim goes on killing new descendants (a fork bomb) before it gives up.
const KILL_FOR_MS: i64 = 5_000;

/// The signal that tells a shim to kill everything at once.
pub const KILL_ALL: c_int = libc::SIGUSR2;

/// Whether this kernel lets a process become a child subreaper (Linux 3.4+; some sandboxes
/// refuse it). Without one, the spawned child is the agent itself, as off Linux.
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let mut on: c_int = 0;
        // SAFETY: PR_GET_CHILD_SUBREAPER writes one int through the pointer.
        unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut on as *mut c_int) == 0 }
    })
}

/// Asks the shim `pid` to kill the agent and everything below it now.
pub fn request_kill(pid: i32) {
    if pid > 1 {
        // SAFETY: sending a signal; ESRCH (already gone) is fine.
        unsafe {
            libc::kill(pid, KILL_ALL);
        }
    }
}

/// Runs between fork and exec of a spawned agent, with oneshot's pid `parent`. Returns (in the
/// agent, which goes on to exec) or never returns (in the shim). The shim removes `prompt_file`
/// and then its directory `prompt_dir` when it is done (`$ONESHOT_PROMPT_FILE` must not
/// outlive the agent, even when oneshot was killed and never ran its own cleanup). The agent —
/// not the shim, which must still remove the prompt file and see every process below it —
/// enters its namespaces `ns` when it has them, then enforces the Landlock ruleset `confine`
/// when it is one (≥ 0).
///
/// # Safety
/// Only between fork and exec, as a `pre_exec` closure; `confine` is -1 or a ruleset open in
/// this process; `ns` is `None` or a plan that outlives the spawn.
pub unsafe fn split(
    parent: pid_t,
    prompt_file: &CStr,
    prompt_dir: &CStr,
    confine: c_int,
    ns: Option<&crate::sandbox::namespace::Prepared>,
) -> std::io::Result<()> {
    // SAFETY (whole function): async-signal-safe system calls on plain integers and stack
    // memory only.
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) == -1 {
            return Err(std::io::Error::last_os_error());
        }
        let shim = libc::getpid();
        let agent = libc::fork();
        if agent == -1 {
            return Err(std::io::Error::last_os_error());
        }
        if agent == 0 {
            // The agent: dies with the shim (or at once, if the shim is already gone).
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != shim {
                libc::raise(libc::SIGKILL);
            }
            if let Some(ns) = ns {
                crate::sandbox::namespace::enter(ns)?;
            }
            if confine >= 0 {
                super::confine::enforce(confine)?;
            }
            return Ok(());
        }
        run(parent, agent, prompt_file, prompt_dir)
    }
}

/// The shim's life: wait for the agent, clean up below it and its prompt file, exit as it did.
unsafe fn run(parent: pid_t, agent: pid_t, prompt_file: &CStr, prompt_dir: &CStr) -> ! {
    // SAFETY (whole function): as in `split`.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"oneshot-reaper".as_ptr());
        // The handlers inherited from oneshot (its runtime's SIGCHLD, its Ctrl-C counting) have
        // no business here: a group SIGTERM is for the agent.
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
        // SIGCHLD and kill requests are taken with sigtimedwait, never by a handler: a request
        // that comes just before the shim waits stays pending instead of being missed.
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        libc::signal(KILL_ALL, libc::SIG_DFL);
        let mut waited: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut waited);
        libc::sigaddset(&mut waited, libc::SIGCHLD);
        libc::sigaddset(&mut waited, KILL_ALL);
        libc::sigprocmask(libc::SIG_SETMASK, &waited, std::ptr::null_mut());
        // oneshot's files (its lock, its log, the pipes' other ends) are not the shim's to hold.
        close_all_fds();
        libc::prctl(libc::PR_SET_PDEATHSIG, KILL_ALL);
        let mut kill_now = libc::getppid() != parent;

        let mut agent_status: Option<c_int> = None;
        loop {
            if kill_now {
                kill_descendants(agent, &mut agent_status);
            }
            let no_children = reap_ready(agent, &mut agent_status);
            if agent_status.is_some() || no_children {
                break;
            }
            // Woken by SIGCHLD or a kill request, which stay pending while blocked, so nothing
            // is missed between the reap above and this wait; a quiet agent costs no wake-ups.
            kill_now |= wait_signal(&waited, IDLE_MS) == KILL_ALL;
        }
        // The agent's orphans may finish on their own, unless oneshot wants them gone now.
        let mut lingered = 0;
        while !kill_now && lingered < LINGER_MS {
            if reap_ready(agent, &mut agent_status) {
                break;
            }
            kill_now = wait_signal(&waited, STEP_MS) == KILL_ALL;
            lingered += STEP_MS;
        }
        kill_descendants(agent, &mut agent_status);
        // Nothing below the shim can read it any more.
        libc::unlink(prompt_file.as_ptr());
        libc::rmdir(prompt_dir.as_ptr());
        exit_as(agent_status.unwrap_or(1 << 8))
    }
}

/// Reaps every child that has ended, keeping the agent's status; true once no child is left.
unsafe fn reap_ready(agent: pid_t, agent_status: &mut Option<c_int>) -> bool {
    // SAFETY: as in `split`.
    unsafe {
        loop {
            let mut status = 0;
            match libc::waitpid(-1, &mut status, libc::WNOHANG) {
                -1 if errno() == libc::EINTR => {}
                -1 => return errno() == libc::ECHILD,
                0 => return false,
                pid if pid == agent => *agent_status = Some(status),
                _ => {}
            }
        }
    }
}

/// Waits up to `ms` for one of the (blocked) signals in `set`; returns it, or 0.
unsafe fn wait_signal(set: &libc::sigset_t, ms: i64) -> c_int {
    let t = libc::timespec {
        tv_sec: ms / 1000,
        tv_nsec: (ms % 1000) * 1_000_000,
    };
    // SAFETY: sigtimedwait with a valid set and timespec; the info is not wanted.
    unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &t).max(0) }
}

/// SIGKILLs every child of the shim and reaps it, until none is left: killing a child hands
/// its own children to the shim (the subreaper), so round by round the whole tree goes. The
/// agent's status is kept in `agent_status` if it is reaped here.
unsafe fn kill_descendants(agent: pid_t, agent_status: &mut Option<c_int>) {
    // SAFETY: as in `split`.
    unsafe {
        let me = libc::getpid();
        let mut spent = 0;
        loop {
            for_each_child(me, |pid| {
                libc::kill(pid, libc::SIGKILL);
            });
            if reap_ready(agent, agent_status) {
                return;
            }
            if spent >= KILL_FOR_MS {
                return;
            }
            // Killed children not yet reapable, or new ones handed over: another round.
            sleep_ms(1);
            spent += 1;
        }
    }
}

/// Calls `f` with the pid of every live child of `me` (from `/proc/*/stat`).
unsafe fn for_each_child(me: pid_t, mut f: impl FnMut(pid_t)) {
    // SAFETY: as in `split`; buffers are on the stack.
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir == -1 {
            return;
        }
        let mut buf = [0u8; 4096];
        loop {
            let n = libc::syscall(
                libc::SYS_getdents64,
                dir,
                buf.as_mut_ptr(),
                buf.len(),
            );
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            while at < n as usize {
                // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name.
                let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                let name = &buf[at + 19..at + reclen];
                if let Some(pid) = parse_pid(name)
                    && pid != me
                    && parent_of(pid) == Some(me)
                {
                    f(pid);
                }
                at += reclen;
            }
        }
        libc::close(dir);
    }
}

/// A NUL-terminated directory name as a pid, when it is all digits.
fn parse_pid(name: &[u8]) -> Option<pid_t> {
    let mut pid: pid_t = 0;
    let mut digits = 0;
    for &b in name {
        match b {
            0 => break,
            b'0'..=b'9' => {
                pid = pid.checked_mul(10)?.checked_add((b - b'0') as pid_t)?;
                digits += 1;
            }
            _ => return None,
        }
    }
    (digits > 0).then_some(pid)
}

/// The parent pid of a live process (not a zombie), from `/proc/PID/stat`.
unsafe fn parent_of(pid: pid_t) -> Option<pid_t> {
    // SAFETY: as in `split`.
    unsafe {
        let mut path = [0u8; 32];
        let mut len = 0;
        for &b in b"/proc/" {
            path[len] = b;
            len += 1;
        }
        len += write_decimal(pid, &mut path[len..]);
        for &b in b"/stat\0" {
            path[len] = b;
            len += 1;
        }
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd == -1 {
            return None;
        }
        let mut stat = [0u8; 512];
        let n = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        if n <= 0 {
            return None;
        }
        parse_parent(&stat[..n as usize])
    }
}

/// The ppid field of a `/proc/PID/stat` line, unless the process is a zombie. The command name
/// may contain spaces and parentheses, so fields are counted after its last `)`.
fn parse_parent(stat: &[u8]) -> Option<pid_t> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    // ") S 1234 ..."
    let rest = stat.get(close + 2..)?;
    let state = *rest.first()?;
    if state == b'Z' || state == b'X' {
        return None;
    }
    parse_pid(rest.get(2..)?.split(|&b| b == b' ').next()?)
}

/// Writes `n` (non-negative) in decimal into `out`; returns the length.
fn write_decimal(n: pid_t, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 12];
    let mut len = 0;
    let mut n = n.max(0) as u32;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[i] = digits[len - 1 - i];
    }
    len
}

/// Closes every file descriptor (close_range, else one by one).
unsafe fn close_all_fds() {
    // SAFETY: as in `split`.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) == 0 {
            return;
        }
        let mut limit: libc::rlimit = std::mem::zeroed();
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(65_536) as c_int
        } else {
            1024
        };
        for fd in 0..max {
            libc::close(fd);
        }
    }
}

/// Exits with the agent's wait status: its code, or death by the same signal (without a core).
unsafe fn exit_as(status: c_int) -> ! {
    // SAFETY: as in `split`.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(sig, libc::SIG_DFL);
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut only);
            libc::sigaddset(&mut only, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig)
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

unsafe fn sleep_ms(ms: i64) {
    let t = libc::timespec {
        tv_sec: 0,
        tv_nsec: ms * 1_000_000,
    };
    // SAFETY: nanosleep with a valid timespec; an interruption only shortens the nap.
    unsafe {
        libc::nanosleep(&t, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_the_parent_unless_a_zombie() {
        assert_eq!(parse_parent(b"12 (sh) S 34 12 12 0"), Some(34));
        assert_eq!(parse_parent(b"12 (a) b) c) R 7 12"), Some(7));
        assert_eq!(parse_parent(b"12 (sh) Z 34 12"), None);
        assert_eq!(parse_parent(b"12 (sh"), None);
    }

    #[test]
    fn pids_and_decimals() {
        assert_eq!(parse_pid(b"123\0junk"), Some(123));
        assert_eq!(parse_pid(b"self\0"), None);
        assert_eq!(parse_pid(b"\0"), None);
        let mut out = [0u8; 12];
        let n = write_decimal(40312, &mut out);
        assert_eq!(&out[..n], b"40312");
        let n = write_decimal(0, &mut out);
        assert_eq!(&out[..n], b"0");
    }
}
