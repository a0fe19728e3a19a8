//! Admission: a runner starts another agent only while the machine keeps a reserve of memory
//! (`job run --reserve 2G`, issue 34) — so fifteen agents on a 24 GB machine wait for memory
//! instead of running it out.

use crate::sandbox::limits::{format_size, parse_size};
use std::fs;
use std::path::Path;

/// The test knob: when set, the path of a file whose content (a size, `2G`) is taken as the
/// memory available instead of the machine's, read afresh at every call; an empty or missing
/// file means the machine's own. For tests only: they cannot otherwise free memory on cue.
pub const TEST_AVAILABLE_MEMORY: &str = "ONESHOT_TEST_AVAILABLE_MEMORY";

/// The memory that can be given to new work now, in bytes: `MemAvailable` of /proc/meminfo,
/// and when this process is inside a memory cgroup with a limit (its own or an ancestor's),
/// the smaller of that and the limit less what the cgroup holds that it cannot reclaim
/// (usage less inactive file pages). `None` where neither can be read.
pub fn available_memory() -> Option<u64> {
    if let Some(path) = std::env::var_os(TEST_AVAILABLE_MEMORY)
        && let Ok(text) = fs::read_to_string(path)
        && !text.trim().is_empty()
    {
        return parse_size(text.trim()).ok();
    }
    let machine = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| meminfo_available(&t));
    match (machine, cgroup_room()) {
        (Some(m), Some(c)) => Some(m.min(c)),
        (m, c) => m.or(c),
    }
}

/// `MemAvailable:` of /proc/meminfo's text, in bytes.
pub(crate) fn meminfo_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A limit at or above this is "no limit" (v1 writes 2^63 rounded down to a page).
const UNLIMITED: u64 = 1 << 62;

/// The room left under the tightest memory cgroup limit this process is in.
fn cgroup_room() -> Option<u64> {
    use crate::sandbox::limits::own_memory_dirs;
    let (v2, v1) = own_memory_dirs();
    let mut room: Option<u64> = None;
    let mut keep = |r: u64| room = Some(room.map_or(r, |x| x.min(r)));
    if let Some((dir, top)) = v2 {
        // Each ancestor's limit binds too; memory.max is absent at the root.
        let mut d = Some(dir.as_path());
        while let Some(here) = d {
            if let (Some(max), Some(cur)) = (
                read_limit(&here.join("memory.max")),
                read(&here.join("memory.current")),
            ) {
                let inactive = stat_key(&here.join("memory.stat"), "inactive_file").unwrap_or(0);
                keep(max.saturating_sub(cur.saturating_sub(inactive)));
            }
            if here == top {
                break;
            }
            d = here.parent();
        }
    }
    if let Some(dir) = v1 {
        // hierarchical_memory_limit is the tightest of the cgroup's and its ancestors'.
        let stat = dir.join("memory.stat");
        if let (Some(max), Some(cur)) = (
            stat_key(&stat, "hierarchical_memory_limit"),
            read(&dir.join("memory.usage_in_bytes")),
        ) && max < UNLIMITED
        {
            let inactive = stat_key(&stat, "total_inactive_file").unwrap_or(0);
            keep(max.saturating_sub(cur.saturating_sub(inactive)));
        }
    }
    room
}

fn read(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A limit file: a number, or `max` (none).
fn read_limit(path: &Path) -> Option<u64> {
    read(path).filter(|&n| n < UNLIMITED)
}

fn stat_key(path: &Path, key: &str) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The memory a runner keeps free: it starts no new agent while less is available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserve(pub u64);

/// Whether another agent may start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Admission {
    /// Enough memory is available (or it cannot be read: admission never stops a runner on a
    /// machine that does not say).
    Go,
    /// Less than the reserve is available.
    Wait {
        /// Available now, in bytes.
        available: u64,
        /// The reserve, in bytes.
        reserve: u64,
    },
}

impl Reserve {
    /// Parses a reserve as a size (`2G`).
    pub fn parse(s: &str) -> Result<Reserve, crate::sandbox::limits::LimitsError> {
        parse_size(s).map(Reserve)
    }

    /// Whether the memory available now keeps the reserve.
    pub fn admits(&self) -> Admission {
        self.judge(available_memory())
    }

    /// Whether `available` keeps the reserve.
    pub fn judge(&self, available: Option<u64>) -> Admission {
        match available {
            Some(a) if a < self.0 => Admission::Wait {
                available: a,
                reserve: self.0,
            },
            _ => Admission::Go,
        }
    }
}

impl std::fmt::Display for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Admission::Go => write!(f, "memory available"),
            Admission::Wait { available, reserve } => write!(
                f,
                "waiting for memory: {} free, reserve {}",
                format_size(*available),
                format_size(*reserve)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_from_meminfo() {
        let text = "MemTotal:       24683520 kB\nMemFree:        19408384 kB\nMemAvailable:   22361088 kB\n";
        assert_eq!(meminfo_available(text), Some(22361088 * 1024));
        assert_eq!(meminfo_available("MemTotal: 1 kB\n"), None);
        // This machine says something, and less than a petabyte.
        let now = available_memory().expect("/proc/meminfo is readable");
        assert!(now > 0 && now < 1 << 50);
    }

    #[test]
    fn the_reserve_admits_only_while_kept() {
        let r = Reserve::parse("2G").unwrap();
        assert_eq!(r.judge(Some(3 << 30)), Admission::Go);
        assert_eq!(r.judge(Some(2 << 30)), Admission::Go);
        let wait = r.judge(Some(1 << 30));
        assert_eq!(
            wait,
            Admission::Wait {
                available: 1 << 30,
                reserve: 2 << 30
            }
        );
        assert_eq!(
            wait.to_string(),
            "waiting for memory: 1 GiB free, reserve 2 GiB"
        );
        // A machine that does not say is not held.
        assert_eq!(r.judge(None), Admission::Go);
        // The machine's own measure, for real: a petabyte is more than it has.
        assert!(matches!(Reserve(1 << 50).admits(), Admission::Wait { .. }));
    }
}
