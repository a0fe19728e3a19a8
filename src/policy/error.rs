//! What can go wrong with a policy, and which hook it happened in.
//!
//! Every variant except [`PolicyError::Read`] and [`PolicyError::Load`] names the hook it came
//! from, because the engine records a policy error against the transition that asked for it
//! (ARCHITECTURE.md, "the one rule": a policy error is recorded and handled by the fallback).

use std::path::PathBuf;
use std::time::Duration;

/// The hook name used for errors raised while the file's top-level code runs.
pub const LOAD_HOOK: &str = "load";

/// A policy that could not be loaded, or a hook call that did not produce a usable answer.
///
/// Messages read after "failed to …" ([`crate::error`]): `read policy /x/p.lua`, `load policy
/// p.lua:3: …`, `run hook verdict: p.lua:7: …`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The policy file could not be read from disk.
    #[error("read policy {}", path.display())]
    Read {
        /// The file that was asked for.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not compile, does not return a table, or its table breaks the schema
    /// (unknown key, wrong type, bad guard key, bad regex, bad limit).
    #[error("load policy {}: {message}", place(file, *line))]
    Load {
        /// The chunk name (the file name).
        file: String,
        /// The line the problem is on, when known.
        line: Option<u32>,
        /// What is wrong; for Lua syntax errors, Lua's own message.
        message: String,
    },
    /// The policy reached for something the sandbox withholds (`io`, `os.execute`, `require`,
    /// …) or tried to modify a read-only library table.
    #[error("run {}: it broke the sandbox: {message}", who(hook))]
    Sandbox {
        /// The hook (or `"load"`: the file's top-level code).
        hook: String,
        /// Lua's message, starting with `file:line:`.
        message: String,
    },
    /// The hook raised a Lua error.
    #[error("run {}: {message}", who(hook))]
    Runtime {
        /// The hook (or `"load"`: the file's top-level code).
        hook: String,
        /// Lua's message, starting with `file:line:` when Lua knew the line.
        message: String,
    },
    /// The hook was still running when its wall-clock budget ran out.
    #[error(
        "run {} within its {} budget; make it faster or raise the budget (--hook-budget)",
        who(hook),
        humantime::format_duration(*budget)
    )]
    Budget {
        /// The hook (or `"load"`: the file's top-level code).
        hook: String,
        /// The budget it had.
        budget: Duration,
    },
    /// The user interrupted the hook (Ctrl-C) while it ran: nothing was decided, and a resume
    /// asks it again ([`super::interrupt_hooks`]).
    #[error("finish {}: it was interrupted (Ctrl-C) while it ran", who(hook))]
    Interrupted {
        /// The hook (or `"load"`: the file's top-level code).
        hook: String,
    },
    /// The Lua state hit its memory cap during the hook.
    #[error("run {} within the memory limit ({} MiB)", who(hook), limit / (1024 * 1024))]
    Memory {
        /// The hook (or `"load"`: the file's top-level code).
        hook: String,
        /// The cap in bytes.
        limit: usize,
    },
    /// The hook returned something outside its contract.
    #[error(
        "use the answer of {}: it returned {got}; expected {expected}",
        who(hook)
    )]
    BadReturn {
        /// The hook.
        hook: String,
        /// A description of what came back (`a number`, `"maybe"`, `nil`).
        got: String,
        /// What the contract allows.
        expected: String,
    },
    /// The policy loaded but its own tests failed (run before a reload activates it), so it must
    /// not be activated.
    #[error(
        "validate policy {file}: {} of {total} policy test(s) failed: {}",
        failures.len(),
        failures.join("; ")
    )]
    Tests {
        /// The policy file name.
        file: String,
        /// How many tests ran.
        total: usize,
        /// Each failed test as `name (file:line): message`.
        failures: Vec<String>,
    },
}

impl PolicyError {
    /// A short machine-readable name for the kind of failure (the `error_kind` of decision
    /// records): `read`, `load`, `sandbox`, `runtime`, `budget`, `interrupted`, `memory`,
    /// `bad_return`, `tests`.
    pub fn kind(&self) -> &'static str {
        match self {
            PolicyError::Read { .. } => "read",
            PolicyError::Load { .. } => "load",
            PolicyError::Sandbox { .. } => "sandbox",
            PolicyError::Runtime { .. } => "runtime",
            PolicyError::Budget { .. } => "budget",
            PolicyError::Interrupted { .. } => "interrupted",
            PolicyError::Memory { .. } => "memory",
            PolicyError::BadReturn { .. } => "bad_return",
            PolicyError::Tests { .. } => "tests",
        }
    }

    /// The hook the error came from (`"verdict"`, `"guards[A -> B]"`, `"load"`), or `None`
    /// for errors about the file as a whole.
    pub fn hook(&self) -> Option<&str> {
        match self {
            PolicyError::Read { .. } | PolicyError::Load { .. } | PolicyError::Tests { .. } => None,
            PolicyError::Sandbox { hook, .. }
            | PolicyError::Runtime { hook, .. }
            | PolicyError::Budget { hook, .. }
            | PolicyError::Interrupted { hook }
            | PolicyError::Memory { hook, .. }
            | PolicyError::BadReturn { hook, .. } => Some(hook),
        }
    }

    /// `file:line` of the problem when it is known, so a UI can link to it.
    pub fn location(&self) -> Option<String> {
        match self {
            PolicyError::Load {
                file,
                line: Some(line),
                ..
            } => Some(format!("{file}:{line}")),
            PolicyError::Sandbox { message, .. } | PolicyError::Runtime { message, .. } => {
                lua_location(message)
            }
            _ => None,
        }
    }
}

/// Finds the `name:line:` prefix Lua puts on runtime errors.
pub(crate) fn lua_location(message: &str) -> Option<String> {
    let (name, rest) = message.split_once(':')?;
    let (line, _) = rest.split_once(':')?;
    (!name.is_empty() && !name.contains(char::is_whitespace) && line.parse::<u32>().is_ok())
        .then(|| format!("{name}:{line}"))
}

fn who(hook: &str) -> String {
    if hook == LOAD_HOOK {
        "the policy's top-level code".to_string()
    } else {
        format!("hook {hook}")
    }
}

fn place(file: &str, line: Option<u32>) -> String {
    match line {
        Some(line) => format!("{file}:{line}"),
        None => file.to_string(),
    }
}
