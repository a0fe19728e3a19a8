//! What a process uses, read from `/proc`: its CPU time and resident memory.

use std::time::Duration;

/// The process's CPU time so far (user + system), in clock ticks.
fn ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let f: Vec<&str> = stat
        .rsplit(')')
        .next()
        .expect("fields")
        .split_whitespace()
        .collect();
    // After the `)`: the state is the first field (3), utime and stime are 14 and 15.
    let n = |i: usize| f[i].parse::<u64>().expect("a count");
    n(11) + n(12)
}

/// The share of one core process `pid` used over the next `span`.
pub fn cpu(pid: u32, span: Duration) -> f64 {
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let before = ticks(pid);
    std::thread::sleep(span);
    (ticks(pid) - before) as f64 / hz / span.as_secs_f64()
}

/// Process `pid`'s resident memory, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}
