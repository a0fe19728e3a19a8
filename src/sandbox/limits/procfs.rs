//! What /proc says about the agent's processes: who belongs to its tree, how much memory each
//! uses, and what each is called — for the watch fallback's sum and for naming the process a
//! limit was reached by.

use std::collections::{HashMap, HashSet};
use std::fs;

/// One process and the memory it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcUse {
    /// Its pid.
    pub pid: i32,
    /// Its command as the kernel names it (`/proc/PID/comm`: `node`, `python3`).
    pub command: String,
    /// Its memory in bytes: the proportional set size (shared pages divided among their
    /// users, so a tree's sum counts each page once) where readable, else the resident set.
    pub bytes: u64,
}

/// A process as its `/proc/PID/stat` line says.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// When it started (clock ticks since boot): with the pid, who it is — a pid reused by a
    /// new process is not the one tracked.
    pub start: u64,
}

/// Reads `/proc/PID/stat`; `None` when the process is gone.
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command is in parentheses and may hold spaces and parentheses itself: the fields
    // start after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state(0) ppid(1) pgrp(2) … starttime is field 22 of the line, 19 here.
    Some(Stat {
        pid,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
    })
}

/// Every process on the machine (those that vanish while read are left out).
pub(crate) fn all() -> Vec<Stat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// The processes of a tree: those already `known` (pid and start time, still alive), the
/// descendants of any of them, and the members of `group` (a process group id) if given. The
/// known set carries a tree across its root's death: an orphan reparented to init is still
/// the agent's.
pub(crate) fn tree(known: &HashSet<(i32, u64)>, group: Option<i32>) -> HashSet<(i32, u64)> {
    let procs = all();
    let mut members: HashSet<(i32, u64)> = procs
        .iter()
        .filter(|s| known.contains(&(s.pid, s.start)) || Some(s.pgrp) == group)
        .map(|s| (s.pid, s.start))
        .collect();
    let mut children: HashMap<i32, Vec<&Stat>> = HashMap::new();
    for s in &procs {
        children.entry(s.ppid).or_default().push(s);
    }
    let mut todo: Vec<i32> = members.iter().map(|(p, _)| *p).collect();
    while let Some(p) = todo.pop() {
        for c in children.get(&p).into_iter().flatten() {
            if members.insert((c.pid, c.start)) {
                todo.push(c.pid);
            }
        }
    }
    members
}

/// What one process uses, `None` when it is gone (or a kernel thread with no memory).
pub(crate) fn usage(pid: i32) -> Option<ProcUse> {
    let command = fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()?
        .trim_end()
        .to_string();
    let bytes = pss(pid).or_else(|| rss(pid))?;
    Some(ProcUse {
        pid,
        command,
        bytes,
    })
}

/// `Pss:` of `/proc/PID/smaps_rollup`, in bytes.
fn pss(pid: i32) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Pss:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The resident pages of `/proc/PID/statm`, in bytes.
fn rss(pid: i32) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

/// The page size, from the kernel.
fn page_size() -> u64 {
    // SAFETY: sysconf only reads a constant of the system.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as u64 } else { 4096 }
}

/// The biggest of `pids`' processes by memory, with each one's use summed.
pub(crate) fn measure(pids: impl IntoIterator<Item = i32>) -> (u64, Option<ProcUse>) {
    let mut total = 0;
    let mut biggest: Option<ProcUse> = None;
    for u in pids.into_iter().filter_map(usage) {
        total += u.bytes;
        if biggest.as_ref().is_none_or(|b| u.bytes > b.bytes) {
            biggest = Some(u);
        }
    }
    (total, biggest)
}
