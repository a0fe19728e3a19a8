//! An agent's own cgroup: made before its spawn, joined by the child before exec, read after.
//!
//! cgroup v2: beside this process's cgroup, in `oneshot-agents/NAME` under its parent (v2's
//! rule that a cgroup with processes has no controllers for children forbids a child of our
//! own cgroup; the parent is a delegated subtree's slice, or the root) — the way systemd's
//! delegation (`Delegate=yes`: the user owns the subtree's files) lets an unprivileged runner
//! do it. cgroup v1 (as root): `oneshot/NAME` under this process's cgroup in each of the
//! memory, pids and cpu hierarchies; nested, so the agents stay inside whatever bounds the
//! runner itself.

use super::monitor::Monitor;
use super::place::own_dir;
use super::{AgentLimits, Exceeded, LimitOutcome, LimitsError};
use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which cgroup interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// Per-controller hierarchies.
    V1,
    /// The unified hierarchy.
    V2,
}

/// One agent's cgroup (a directory per v1 hierarchy). Dropping it kills what is left in it and
/// removes it.
#[derive(Debug)]
pub struct Cgroup {
    version: Version,
    /// The directory with the memory files (v2: the one directory).
    memory: Option<PathBuf>,
    /// The directory with the pids files.
    pids: Option<PathBuf>,
    /// Every directory made, deepest hierarchy order irrelevant: joined, killed, removed.
    dirs: Vec<PathBuf>,
    /// Their `cgroup.procs`, open for the child to write.
    procs: Vec<OwnedFd>,
    limits: AgentLimits,
    monitor: Monitor,
}

/// The v1 period the cpu quota is a share of: 100 ms, the kernel's default.
const CPU_PERIOD_US: u64 = 100_000;

impl Cgroup {
    /// Makes the cgroup for agent `name` with `limits` set: v2 where it is delegated with the
    /// controllers needed, else v1 where writable (root); the error says why neither.
    pub(crate) fn create(name: &str, limits: &AgentLimits) -> Result<Cgroup, LimitsError> {
        let v2 = match create_v2(name, limits) {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
        match create_v1(name, limits) {
            Ok(c) => Ok(c),
            Err(v1) => Err(LimitsError::NoCgroup(format!(
                "cgroup v2: {v2}; cgroup v1: {v1}"
            ))),
        }
    }

    /// Which interface it is.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Its directories (one for v2; one per hierarchy for v1).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The open `cgroup.procs` files, for [`super::join_self`].
    pub fn join_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// The pids in it now.
    pub fn pids(&self) -> Vec<i32> {
        self.dirs
            .iter()
            .flat_map(|d| members(d))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// Resolves when the kernel killed a process of the agent's for the memory limit.
    pub async fn exceeded(&self) -> Exceeded {
        self.monitor.exceeded().await
    }

    /// Which limits were reached, and the peak memory.
    pub fn outcome(&self) -> LimitOutcome {
        let mut out = LimitOutcome {
            pids_limit: self.limits.pids,
            ..LimitOutcome::default()
        };
        if let Some(m) = &self.memory {
            out.memory_peak = match self.version {
                Version::V2 => read_u64(&m.join("memory.peak")),
                Version::V1 => read_u64(&m.join("memory.max_usage_in_bytes")),
            };
            // The monitor's word, else the counters' (a kill between its last look and now).
            out.memory = self.monitor.seen().or_else(|| {
                (oom_kills(self.version, m) > 0).then(|| Exceeded {
                    limit: self.limits.memory.unwrap_or(0),
                    by: None,
                    bytes: None,
                })
            });
        }
        if let Some(p) = &self.pids {
            out.pids_refused = key(&p.join("pids.events"), "max").unwrap_or(0);
        }
        out
    }

    /// Kills every process in it (v2: `cgroup.kill`; else SIGKILL to each, again until none
    /// is left, as a forking process may add one meanwhile), waiting up to 5 s.
    pub fn kill_all(&self) {
        if self.version == Version::V2 {
            let _ = fs::write(self.dirs[0].join("cgroup.kill"), "1");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = self.pids();
            if left.is_empty() || Instant::now() > deadline {
                return;
            }
            for pid in left {
                // SAFETY: kill(2) with a pid read from the cgroup; no memory is touched.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Removes it: kills what is left, waits until empty, removes the directories. Also done
    /// on drop; this says what failed.
    pub fn remove(mut self) -> io::Result<()> {
        self.remove_now()
    }

    fn remove_now(&mut self) -> io::Result<()> {
        self.monitor.stop();
        self.procs.clear();
        if self.dirs.is_empty() {
            return Ok(());
        }
        self.kill_all();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut last = Ok(());
        for d in std::mem::take(&mut self.dirs) {
            loop {
                match fs::remove_dir(&d) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                    // Busy while a killed process (or an unreaped zombie) is still counted.
                    Err(e) if Instant::now() > deadline => {
                        last = Err(io::Error::new(e.kind(), format!("{}: {e}", d.display())));
                        break;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
        last
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if let Err(e) = self.remove_now() {
            tracing::warn!("could not remove an agent's cgroup: {e}");
        }
    }
}

/// The controllers `limits` need, in v2's names.
fn needed(limits: &AgentLimits) -> Vec<&'static str> {
    let mut c = Vec::new();
    if limits.memory.is_some() {
        c.push("memory");
    }
    if limits.pids.is_some() {
        c.push("pids");
    }
    if limits.cpu.is_some() {
        c.push("cpu");
    }
    c
}

fn create_v2(name: &str, limits: &AgentLimits) -> Result<Cgroup, LimitsError> {
    let own = own_dir(None)
        .ok_or_else(|| LimitsError::NoCgroup("no cgroup2 mount holds this process".into()))?;
    let root = own.join("cgroup.subtree_control").exists() && !own.join("cgroup.type").exists();
    // The root has no cgroup.type and may hold processes beside children; anywhere else the
    // agents go beside our own cgroup.
    let parent = if root {
        own.clone()
    } else {
        own.parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| LimitsError::NoCgroup("no parent".into()))?
    };
    let want = needed(limits);
    let has = fs::read_to_string(parent.join("cgroup.controllers"))
        .map_err(|e| LimitsError::io(parent.join("cgroup.controllers"), e))?;
    let missing: Vec<_> = want
        .iter()
        .filter(|c| !has.split_whitespace().any(|h| h == **c))
        .collect();
    if !missing.is_empty() {
        return Err(LimitsError::NoCgroup(format!(
            "{} does not have the {} controller{} (not delegated here)",
            parent.display(),
            missing
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if missing.len() == 1 { "" } else { "s" }
        )));
    }
    let base = parent.join("oneshot-agents");
    enable(&parent, &want)?;
    mkdir(&base)?;
    enable(&base, &want)?;
    let dir = fresh(&base.join(name))?;
    let cg = Cgroup {
        version: Version::V2,
        memory: limits.memory.map(|_| dir.clone()),
        pids: limits.pids.map(|_| dir.clone()),
        dirs: vec![dir.clone()],
        procs: Vec::new(),
        limits: *limits,
        monitor: Monitor::idle(),
    };
    // From here a failure removes the directory (the drop).
    let mut cg = cg;
    if let Some(m) = limits.memory {
        write(&dir.join("memory.max"), &m.to_string())?;
        if dir.join("memory.swap.max").exists() {
            write(&dir.join("memory.swap.max"), "0")?;
        }
    }
    if let Some(n) = limits.pids {
        write(&dir.join("pids.max"), &n.to_string())?;
    }
    if let Some(c) = limits.cpu {
        let quota = ((c * CPU_PERIOD_US as f64) as u64).max(1000);
        write(&dir.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?;
    }
    cg.procs.push(open_procs(&dir)?);
    cg.monitor = Monitor::start(Version::V2, cg.memory.clone(), limits.memory);
    Ok(cg)
}

fn create_v1(name: &str, limits: &AgentLimits) -> Result<Cgroup, LimitsError> {
    let mut cg = Cgroup {
        version: Version::V1,
        memory: None,
        pids: None,
        dirs: Vec::new(),
        procs: Vec::new(),
        limits: *limits,
        monitor: Monitor::idle(),
    };
    for c in needed(limits) {
        let own = own_dir(Some(c)).ok_or_else(|| {
            LimitsError::NoCgroup(format!("no v1 hierarchy with the {c} controller"))
        })?;
        let base = own.join("oneshot");
        mkdir(&base)?;
        let dir = base.join(name);
        // cpu and cpuacct may share a hierarchy: one directory serves both.
        if !cg.dirs.contains(&dir) {
            cg.dirs.push(fresh(&dir)?);
        }
        match c {
            "memory" => {
                let m = limits.memory.unwrap_or(u64::MAX).to_string();
                write(&dir.join("memory.limit_in_bytes"), &m)?;
                // memsw is memory plus swap: equal to the memory limit, no swap.
                let sw = dir.join("memory.memsw.limit_in_bytes");
                if sw.exists() {
                    write(&sw, &m)?;
                }
                cg.memory = Some(dir);
            }
            "pids" => {
                write(&dir.join("pids.max"), &limits.pids.unwrap_or(0).to_string())?;
                cg.pids = Some(dir);
            }
            _ => {
                let quota = ((limits.cpu.unwrap_or(1.0) * CPU_PERIOD_US as f64) as u64).max(1000);
                write(&dir.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
                write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
            }
        }
    }
    for d in &cg.dirs {
        let fd = open_procs(d)?;
        cg.procs.push(fd);
    }
    cg.monitor = Monitor::start(Version::V1, cg.memory.clone(), limits.memory);
    Ok(cg)
}

/// Enables `controllers` for the children of `dir` (those already enabled are left).
fn enable(dir: &Path, controllers: &[&str]) -> Result<(), LimitsError> {
    let file = dir.join("cgroup.subtree_control");
    let on = fs::read_to_string(&file).map_err(|e| LimitsError::io(&file, e))?;
    let add: Vec<String> = controllers
        .iter()
        .filter(|c| !on.split_whitespace().any(|o| o == **c))
        .map(|c| format!("+{c}"))
        .collect();
    if add.is_empty() {
        return Ok(());
    }
    write(&file, &add.join(" "))
}

/// Makes `dir` if missing.
fn mkdir(dir: &Path) -> Result<(), LimitsError> {
    match fs::create_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(LimitsError::io(dir, e)),
        _ => Ok(()),
    }
}

/// Makes `dir` new: a leftover of the same name (a runner that died) is emptied and removed
/// first, so no limit or counter of an earlier agent carries over.
fn fresh(dir: &Path) -> Result<PathBuf, LimitsError> {
    if dir.exists() {
        for pid in members(dir) {
            // SAFETY: kill(2) on a pid read from the leftover cgroup.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while let Err(e) = fs::remove_dir(dir) {
            if Instant::now() > deadline {
                return Err(LimitsError::io(dir, e));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    fs::create_dir(dir).map_err(|e| LimitsError::io(dir, e))?;
    Ok(dir.to_path_buf())
}

fn write(path: &Path, value: &str) -> Result<(), LimitsError> {
    fs::write(path, value).map_err(|e| LimitsError::io(path, e))
}

/// `cgroup.procs` opened for writing, closed on exec (the agent cannot move itself with it).
fn open_procs(dir: &Path) -> Result<OwnedFd, LimitsError> {
    let p = dir.join("cgroup.procs");
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(&p)
        .map_err(|e| LimitsError::io(&p, e))?;
    Ok(OwnedFd::from(f))
}

/// The pids in a cgroup directory.
pub(crate) fn members(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// A file holding one number.
fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The number after `name` in a flat keyed file (`memory.events`, `pids.events`,
/// `memory.oom_control`).
pub(crate) fn key(path: &Path, name: &str) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
}

/// How many processes the kernel killed for the memory limit so far (v2 `memory.events`'
/// `oom_kill`; v1 `memory.oom_control`'s, kernel 4.13 and later).
pub(crate) fn oom_kills(version: Version, dir: &Path) -> u64 {
    match version {
        Version::V2 => key(&dir.join("memory.events"), "oom_kill"),
        Version::V1 => key(&dir.join("memory.oom_control"), "oom_kill"),
    }
    .unwrap_or(0)
}
