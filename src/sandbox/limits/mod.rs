//! Memory and processes bounded per agent (issue 34): a cgroup where the runner can make one
//! (cgroup v2 delegated to it, or v1 as root), else a watch over the agent's process tree.
//!
//! The caller's fork path, in order:
//! 1. [`prepare`] before the spawn: makes the cgroup and opens its `cgroup.procs` files (or
//!    settles on the watch, or on nothing — [`Prepared::warning`] says what is lost).
//! 2. In the child, between fork and exec: [`join_self`] with [`Prepared::join_fds`], so that
//!    the agent and every process it starts are inside from their first instruction.
//! 3. After the spawn: [`Prepared::start`] with the child's pid gives the [`Enforcer`]; await
//!    [`Enforcer::exceeded`] beside the child's exit and, when it fires, stop the agent
//!    ([`Enforcer::kill_all`]) with [`Exceeded`]'s words as the reason.
//! 4. After the agent ends: [`Enforcer::outcome`] says which limit was reached; dropping the
//!    enforcer kills what is left and removes the cgroup.

mod cgroup;
mod monitor;
mod place;
mod procfs;
mod size;
#[cfg(test)]
mod tests;
mod watch;

pub use cgroup::{Cgroup, Version};
pub(crate) use place::own_memory_dirs;
pub use procfs::ProcUse;
pub use size::{format_size, parse_size};
pub use watch::Watch;

use std::io;
use std::os::fd::RawFd;

/// What one agent may spend; `None` is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AgentLimits {
    /// Memory in bytes (swap none: the limit is the RAM the agent can hold).
    pub memory: Option<u64>,
    /// Processes and threads at once.
    pub pids: Option<u32>,
    /// CPUs' worth of time (`1.5` = one and a half cores).
    pub cpu: Option<f64>,
}

impl AgentLimits {
    /// No limit is set.
    pub fn is_empty(&self) -> bool {
        self.memory.is_none() && self.pids.is_none() && self.cpu.is_none()
    }
}

/// What went wrong making or reading limits.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LimitsError {
    /// A size that is not one.
    #[error("{input:?} is not a size ({why}); examples: 2G, 512M, 1.5GiB, 2048")]
    BadSize {
        /// What was written.
        input: String,
        /// What is wrong with it.
        why: String,
    },
    /// A limit that cannot be enforced as asked.
    #[error("{0}")]
    BadLimit(String),
    /// A cgroup file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The OS's words.
        #[source]
        source: io::Error,
    },
    /// No cgroup can be made here, and why (each way tried).
    #[error("no cgroup can be made: {0}")]
    NoCgroup(String),
}

impl LimitsError {
    pub(crate) fn io(path: impl AsRef<std::path::Path>, source: io::Error) -> LimitsError {
        LimitsError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}

/// An agent found over its memory limit: the reason its session stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exceeded {
    /// The limit, in bytes.
    pub limit: u64,
    /// The process using the most memory in the agent's tree at the time, when known (the
    /// kernel's OOM killer picks the biggest, and for a cgroup this is the biggest the last
    /// look before the kill saw).
    pub by: Option<ProcUse>,
    /// What the whole tree used when it was found over (the watch's sum), when known.
    pub bytes: Option<u64>,
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "memory limit {} reached by ", format_size(self.limit))?;
        match &self.by {
            Some(p) => write!(f, "{} (pid {})", p.command, p.pid),
            None => write!(f, "the agent's processes"),
        }
    }
}

/// What the limits did to an agent, read after it ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitOutcome {
    /// The memory limit was reached and a process was killed for it (the kernel's OOM kill in
    /// a cgroup, the watch's verdict otherwise), with who.
    pub memory: Option<Exceeded>,
    /// The most memory the agent's processes held at once, when the cgroup counts it
    /// (`memory.peak`, `memory.max_usage_in_bytes`).
    pub memory_peak: Option<u64>,
    /// Forks refused at the process limit (`pids.events`' `max`); the limit was reached when
    /// non-zero.
    pub pids_refused: u64,
    /// The process limit, for the reason.
    pub pids_limit: Option<u32>,
}

impl LimitOutcome {
    /// The reason a person reads, when a limit was reached: the memory limit's (the agent was
    /// stopped for it), else the process limit's.
    pub fn reason(&self) -> Option<String> {
        if let Some(e) = &self.memory {
            return Some(e.to_string());
        }
        (self.pids_refused > 0).then(|| {
            format!(
                "process limit {} reached by the agent's processes ({} fork{} refused)",
                self.pids_limit
                    .map_or_else(|| "?".into(), |n| n.to_string()),
                self.pids_refused,
                if self.pids_refused == 1 { "" } else { "s" }
            )
        })
    }
}

/// How the limits are to be enforced, chosen before the spawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Prefer {
    /// A cgroup (v2, then v1), else the watch.
    Auto,
    /// The watch even where a cgroup could be made (tests; a setting that forces the
    /// fallback).
    Watch,
}

/// The limits made ready for one agent, before its spawn.
#[derive(Debug)]
pub struct Prepared {
    plan: Plan,
    warning: Option<String>,
}

#[derive(Debug)]
enum Plan {
    Cgroup(Cgroup),
    Watch(u64),
    None,
}

/// How one running agent's limits are enforced.
#[derive(Debug)]
#[non_exhaustive]
pub enum Enforcer {
    /// By the kernel, in a cgroup of the agent's own.
    Cgroup(Cgroup),
    /// By watching the agent's process tree's memory.
    Watch(Watch),
    /// Not at all: no limit was asked, or none can be enforced here.
    None,
}

/// Makes the limits for the agent `name` (unique among the runner's running agents: a
/// session's id) ready: a cgroup where one can be made, else the watch (memory only), else
/// nothing. An error only for limits that are not limits (a zero memory, a negative cpu);
/// a machine that cannot enforce them is a [`Prepared::warning`], not an error.
pub fn prepare(name: &str, limits: &AgentLimits) -> Result<Prepared, LimitsError> {
    prepare_with(name, limits, Prefer::Auto)
}

/// [`prepare`], choosing how.
pub fn prepare_with(
    name: &str,
    limits: &AgentLimits,
    prefer: Prefer,
) -> Result<Prepared, LimitsError> {
    check(name, limits)?;
    if limits.is_empty() {
        return Ok(Prepared {
            plan: Plan::None,
            warning: None,
        });
    }
    let cgroup_failed = match prefer {
        Prefer::Watch => "the watch was asked for".to_string(),
        Prefer::Auto => match Cgroup::create(name, limits) {
            Ok(c) => {
                return Ok(Prepared {
                    plan: Plan::Cgroup(c),
                    warning: None,
                });
            }
            Err(e) => e.to_string(),
        },
    };
    let mut lost = Vec::new();
    if let Some(n) = limits.pids {
        lost.push(format!("the process limit ({n})"));
    }
    if let Some(c) = limits.cpu {
        lost.push(format!("the cpu limit ({c})"));
    }
    let plan = limits.memory.map_or(Plan::None, Plan::Watch);
    let how = match plan {
        Plan::Watch(_) => "memory is watched (every 250 ms, the process tree's PSS) instead",
        _ => "no limit is enforced",
    };
    let unenforced = if lost.is_empty() {
        String::new()
    } else {
        format!("; not enforced: {}", lost.join(", "))
    };
    Ok(Prepared {
        plan,
        warning: Some(format!("{cgroup_failed}; {how}{unenforced}")),
    })
}

/// Refuses limits that are not limits, and names that are not one directory's.
fn check(name: &str, limits: &AgentLimits) -> Result<(), LimitsError> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(LimitsError::BadLimit(format!(
            "{name:?} cannot name an agent's cgroup"
        )));
    }
    if limits.memory == Some(0) || limits.pids == Some(0) {
        return Err(LimitsError::BadLimit(
            "a limit of zero would stop the agent before it starts".into(),
        ));
    }
    if let Some(c) = limits.cpu
        && !(c.is_finite() && c >= 0.01)
    {
        return Err(LimitsError::BadLimit(format!(
            "cpu limit {c}: at least 0.01 of a cpu"
        )));
    }
    Ok(())
}

impl Prepared {
    /// The open `cgroup.procs` files the child joins with [`join_self`] (none for the watch).
    /// They stay open, and valid, as long as this value (then the [`Enforcer`]) lives.
    pub fn join_fds(&self) -> Vec<RawFd> {
        match &self.plan {
            Plan::Cgroup(c) => c.join_fds(),
            _ => Vec::new(),
        }
    }

    /// Why the limits are weaker than asked (no cgroup could be made: the watch instead, or
    /// nothing), for one warning.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// How the limits will be enforced, in a word for records: `cgroup v2`, `cgroup v1`,
    /// `watch` or `none`.
    pub fn kind(&self) -> &'static str {
        match &self.plan {
            Plan::Cgroup(c) => match c.version() {
                Version::V1 => "cgroup v1",
                Version::V2 => "cgroup v2",
            },
            Plan::Watch(_) => "watch",
            Plan::None => "none",
        }
    }

    /// The agent is spawned (and, for a cgroup, joined it before exec): enforcement starts
    /// over `pid`'s tree. `pid` should lead its own process group, so the watch finds every
    /// process of it.
    pub fn start(self, pid: i32) -> Enforcer {
        match self.plan {
            Plan::Cgroup(c) => Enforcer::Cgroup(c),
            Plan::Watch(limit) => Enforcer::Watch(Watch::start(pid, limit)),
            Plan::None => Enforcer::None,
        }
    }
}

impl Enforcer {
    /// Resolves when the agent is found over its memory limit (never for [`Enforcer::None`],
    /// nor for a cgroup without a memory limit). Cancel-safe: await it again in a loop.
    pub async fn exceeded(&self) -> Exceeded {
        match self {
            Enforcer::Cgroup(c) => c.exceeded().await,
            Enforcer::Watch(w) => w.exceeded().await,
            Enforcer::None => std::future::pending().await,
        }
    }

    /// Kills every process of the agent's that is left (SIGKILL), waiting until none is.
    pub fn kill_all(&self) {
        match self {
            Enforcer::Cgroup(c) => c.kill_all(),
            Enforcer::Watch(w) => w.kill_all(),
            Enforcer::None => {}
        }
    }

    /// Which limits were reached.
    pub fn outcome(&self) -> LimitOutcome {
        match self {
            Enforcer::Cgroup(c) => c.outcome(),
            Enforcer::Watch(w) => w.outcome(),
            Enforcer::None => LimitOutcome::default(),
        }
    }
}

/// Joins the calling process to the cgroups whose `cgroup.procs` files `fds` are: writes "0"
/// (the kernel reads it as "the writing process", on v1 and v2 alike) to each.
///
/// # Safety
/// For the child between fork and exec: async-signal-safe (only `write(2)`, no allocation, no
/// lock). `fds` must be open files from [`Prepared::join_fds`] of a value still alive in the
/// parent when the fork happened.
pub unsafe fn join_self(fds: &[RawFd]) -> io::Result<()> {
    for &fd in fds {
        // SAFETY: a write of one byte from a static buffer to a descriptor the caller vouches
        // for; nothing else.
        let n = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
