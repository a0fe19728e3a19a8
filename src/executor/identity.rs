//! Reading who a process is from the system: its start time (so a recycled pid is never
//! mistaken for ours) and whether it waits to be reaped. The identity itself is one of the
//! decision core's nouns ([`crate::process::ProcessIdentity`]).

use crate::process::ProcessIdentity;

/// Reads the identity of a live (or not yet reaped) process that leads group `pgid`.
pub fn identity_of(pid: i32, pgid: i32) -> ProcessIdentity {
    ProcessIdentity {
        pid,
        pgid,
        start_time: start_time(pid),
    }
}

/// The start time of `pid`, or `None` when it is gone or the platform has no `/proc`.
#[cfg(target_os = "linux")]
pub fn start_time(pid: i32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// Whether `pid` has ended and waits to be reaped (or is being reaped).
#[cfg(target_os = "linux")]
pub fn is_zombie(pid: i32) -> bool {
    stat_fields(pid)
        .and_then(|f| f.first().cloned())
        .is_some_and(|state| state == "Z" || state == "X")
}

/// Never known off Linux.
#[cfg(not(target_os = "linux"))]
pub fn is_zombie(_pid: i32) -> bool {
    false
}

/// The start time of `pid`; always `None` off Linux.
#[cfg(not(target_os = "linux"))]
pub fn start_time(_pid: i32) -> Option<u64> {
    None
}

/// The fields of `/proc/PID/stat` after the command name, so index 0 is field 3 (`state`).
/// The name is skipped by its last `)` because it may itself contain spaces and parentheses.
#[cfg(target_os = "linux")]
pub(crate) fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn own_start_time_is_stable_and_missing_pid_has_none() {
        let me = std::process::id() as i32;
        let t = start_time(me).expect("own start time");
        assert_eq!(start_time(me), Some(t));
        assert_eq!(start_time(i32::MAX), None);
    }
}
