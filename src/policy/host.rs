//! `PolicyHost`: one loaded policy file in its own sandboxed Luau state.

use super::error::{LOAD_HOOK, PolicyError};
use super::failmode::FailModes;
use super::helpers::{self, LogBuffer};
use super::limits::Limits;
use super::lua_ctx::CtxTable;
use super::modules::{self, Modules};
use super::sandbox::{Budget, SANDBOX_MARKER, new_state};
use super::schema::{self, Parsed, TOP_LEVEL_KEYS, find_line};
use super::watchdog::WatchdogOptions;
use crate::machine::SessionState;
use mlua::chunk::ChunkMode;
use mlua::{FromLuaMulti, Function, IntoLuaMulti, Lua, Table, Value};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

/// Resource caps and module search path for a policy's Lua state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyOptions {
    /// Wall-clock time one hook call (or the file's top-level code) may run. Default 100 ms.
    pub hook_budget: Duration,
    /// Memory the whole Lua state may use, in bytes. Default 64 MiB.
    pub memory_limit: usize,
    /// Directories `require` searches after the policy file's own directory. Default none.
    pub module_paths: Vec<PathBuf>,
    /// The watchdog behind the budget (see [`WatchdogOptions`]); `None` turns it off.
    pub watchdog: Option<WatchdogOptions>,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        PolicyOptions {
            hook_budget: Duration::from_millis(100),
            memory_limit: 64 * 1024 * 1024,
            module_paths: Vec::new(),
            watchdog: Some(WatchdogOptions::default()),
        }
    }
}

/// A loaded, validated policy: its limits, redaction patterns and hooks, callable from Rust.
///
/// Each host owns a fresh Lua state; reloading a policy means building a new host and swapping
/// it in only if it loaded (STYLE.md, "Lua and reload"). Not `Send`: the engine is
/// single-threaded and Lua states are not shared.
pub struct PolicyHost {
    pub(super) lua: Option<LuaPolicy>,
    /// The policy file's text plus every module's: what decided.
    hash: String,
    /// The policy file's text alone: what the reload watcher compares with the disk.
    file_hash: String,
    path: Option<PathBuf>,
    pub(super) limits: Limits,
    redact: Vec<String>,
    /// The policy file (absolute) and every module it loaded, for the reload watcher.
    sources: Vec<PathBuf>,
    pub(super) fail_modes: FailModes,
    logs: Rc<LogBuffer>,
    /// `continue_conversation` (default true).
    continue_conversation: bool,
    /// `network` (default: both lists empty).
    network: crate::sandbox::egress::NetworkRules,
    /// `env` (default: both lists empty, so only the built-in drops apply).
    env: crate::sandbox::env::EnvRules,
}

/// The Lua half of a host loaded from source (absent for [`PolicyHost::builtin`]).
pub(super) struct LuaPolicy {
    pub(super) lua: Lua,
    pub(super) budget: Budget,
    pub(super) memory_limit: usize,
    pub(super) parsed: Parsed,
    pub(super) ctx: RefCell<CtxTable>,
    /// The table the policy returned (test files see it as `policy`).
    pub(super) table: Table,
    pub(super) modules: Rc<Modules>,
}

impl PolicyHost {
    /// Reads, compiles, runs and validates the policy file at `path`.
    pub fn load(path: &Path, opts: PolicyOptions) -> Result<PolicyHost, PolicyError> {
        let source = read_policy(path)?;
        PolicyHost::load_source(path, &source, &opts)
    }

    /// The policy file at `path` ([`PolicyHost::load`]), or the built-in policy for `None`.
    pub fn load_or_builtin(
        path: Option<&Path>,
        opts: PolicyOptions,
    ) -> Result<PolicyHost, PolicyError> {
        match path {
            Some(p) => PolicyHost::load(p, opts),
            None => Ok(PolicyHost::builtin()),
        }
    }

    /// [`PolicyHost::load`] with the file's text already read (so a caller that validates and
    /// then activates a file can be sure both saw the same bytes).
    pub(super) fn load_source(
        path: &Path,
        source: &str,
        opts: &PolicyOptions,
    ) -> Result<PolicyHost, PolicyError> {
        let name = chunk_name(path);
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut host = PolicyHost::build(&name, source, abs.parent(), opts)?;
        // Absolute, so a session that records it can be resumed from any directory.
        host.path = Some(abs.clone());
        host.sources.insert(0, abs);
        Ok(host)
    }

    /// Loads a policy from a string; `name` is the chunk name errors show (`strict.lua:12`).
    /// `require` searches only `opts.module_paths` (there is no policy directory).
    pub fn from_source(
        name: &str,
        source: &str,
        opts: PolicyOptions,
    ) -> Result<PolicyHost, PolicyError> {
        PolicyHost::build(name, source, None, &opts)
    }

    fn build(
        name: &str,
        source: &str,
        dir: Option<&Path>,
        opts: &PolicyOptions,
    ) -> Result<PolicyHost, PolicyError> {
        let load_err = |line: Option<u32>, message: String| PolicyError::Load {
            file: name.to_string(),
            line,
            message,
        };
        let modules = Rc::new(Modules::new(dir, &opts.module_paths));
        let logs = Rc::new(LogBuffer::default());
        let (lua, budget) = new_state(
            opts.memory_limit,
            opts.hook_budget,
            opts.watchdog.clone(),
            |lua| {
                modules::install(lua, Rc::clone(&modules))?;
                helpers::install(lua, Rc::clone(&logs))
            },
        )
        .map_err(|e| load_err(None, format!("cannot create the lua state: {e}")))?;
        // Text mode: Luau bytecode is not verified, so a policy must never be loaded as bytecode.
        let chunk = lua
            .load(source)
            .set_name(format!("@{name}"))
            .set_mode(ChunkMode::Text)
            .into_function()
            .map_err(|e| syntax_error(name, e))?;
        let ctx = CtxTable::new(&lua).map_err(|e| load_err(None, e.to_string()))?;
        let table = lua
            .create_table()
            .map_err(|e| load_err(None, e.to_string()))?;
        let mut policy = LuaPolicy {
            lua,
            budget,
            memory_limit: opts.memory_limit,
            parsed: Parsed::default(),
            ctx: RefCell::new(ctx),
            table,
            modules,
        };
        let value: Value = policy.call(LOAD_HOOK, &chunk, ())?;
        // From here on a hook may only `require` what the top level already loaded, and may
        // not change the globals: the top level may define them, a hook must use locals (else
        // one hook could redefine `tostring`, or leave a global, and change a later decision).
        policy.modules.set_open(false);
        policy.lua.globals().set_readonly(true);
        let Value::Table(table) = value else {
            return Err(load_err(
                None,
                format!(
                    "the policy must return a table (`return {{ ... }}`), not {}",
                    value.type_name()
                ),
            ));
        };
        policy.parsed = schema::parse(&table).map_err(|e| {
            let line = e.needle.as_deref().and_then(|n| find_line(source, n));
            load_err(line, e.message)
        })?;
        policy.table = table;
        let file_hash = content_hash(source);
        let hash = match policy.modules.digest() {
            None => file_hash.clone(),
            Some(modules) => {
                let mut d = Sha256::new();
                d.update(source.as_bytes());
                d.update(modules);
                short_hash(&d.finalize())
            }
        };
        Ok(PolicyHost {
            hash,
            file_hash,
            path: None,
            limits: policy.parsed.limits,
            redact: std::mem::take(&mut policy.parsed.redact),
            sources: policy.modules.sources(),
            fail_modes: policy.parsed.fail_modes,
            logs,
            continue_conversation: policy.parsed.continue_conversation.unwrap_or(true),
            network: policy.parsed.network.clone().unwrap_or_default(),
            env: policy.parsed.env.clone().unwrap_or_default(),
            lua: Some(policy),
        })
    }

    /// The policy used when no file is given: every hook at its built-in default.
    pub fn builtin() -> PolicyHost {
        PolicyHost {
            lua: None,
            hash: "builtin".to_string(),
            file_hash: "builtin".to_string(),
            path: None,
            limits: Limits::default(),
            redact: Vec::new(),
            sources: Vec::new(),
            fail_modes: FailModes::default(),
            logs: Rc::new(LogBuffer::default()),
            continue_conversation: true,
            network: Default::default(),
            env: Default::default(),
        }
    }

    /// Absolute paths of the policy file and of every module it loaded, for the reload
    /// watcher. Empty for [`PolicyHost::builtin`]; modules only for `from_source`.
    pub fn sources(&self) -> &[PathBuf] {
        &self.sources
    }

    /// Drains the `oneshot.log(level, msg)` lines written since the last call, as
    /// `(level, message)` pairs in order. The engine calls it after each hook call so each line
    /// is recorded against the hook that wrote it (the lines also went to tracing already).
    pub fn take_logs(&self) -> Vec<(String, String)> {
        self.logs.take()
    }

    /// Content hash recorded with every decision: `sha256:` + 16 hex chars, or `builtin`.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The hash of the policy file's text alone (same form as [`PolicyHost::hash`], which also
    /// covers the modules). The reload watcher compares it with the file on disk.
    pub fn file_hash(&self) -> &str {
        &self.file_hash
    }

    /// The file the policy came from (`None` for [`PolicyHost::builtin`] and `from_source`).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The effective limits (defaults filled in).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether the next worker iteration continues the worker agent's own conversation
    /// (`claude --resume`, `codex exec resume`), so the critique arrives in context; the
    /// policy's `continue_conversation`, default true.
    pub fn continue_conversation(&self) -> bool {
        self.continue_conversation
    }

    /// Who `job land` asks to resolve a rebase's conflicts when `--resolver` names nobody: the
    /// policy's `resolver` (an agent, a `[targets.NAME]`, or `cmd:COMMAND`).
    pub fn resolver(&self) -> Option<&str> {
        self.lua.as_ref()?.parsed.resolver.as_deref()
    }

    /// The policy's `network` lists, patterns already checked (empty when it has none: then
    /// only each agent's own model API and the `egress` hook let a connection through).
    pub fn network_rules(&self) -> &crate::sandbox::egress::NetworkRules {
        &self.network
    }

    /// The policy's `env` lists, patterns already checked (empty when it has none: then the
    /// built-in credential drops alone decide).
    pub fn env_rules(&self) -> &crate::sandbox::env::EnvRules {
        &self.env
    }

    /// Extra secret patterns from `redact`, already checked to compile as regexes.
    pub fn redact_patterns(&self) -> &[String] {
        &self.redact
    }

    /// The keys the policy defines, in documentation order, with each guard listed as
    /// `guards[FROM -> TO]`.
    pub fn hooks(&self) -> Vec<String> {
        let Some(policy) = &self.lua else {
            return Vec::new();
        };
        let p = &policy.parsed;
        let mut out = Vec::new();
        for key in TOP_LEVEL_KEYS {
            let present = match key {
                "limits" => p.has_limits,
                "redact" => p.has_redact,
                "verdict" => p.verdict.is_some(),
                "salvage" => p.salvage.is_some(),
                "next_prompt" => p.next_prompt.is_some(),
                "audit_prompt" => p.audit_prompt.is_some(),
                "checks" => p.checks.is_some(),
                "resolver" => p.resolver.is_some(),
                "on_transition" => p.on_transition.is_some(),
                "on_notify" => p.on_notify.is_some(),
                "approve" => p.approve.is_some(),
                "permit" => p.permit.is_some(),
                "network" => p.network.is_some(),
                "egress" => p.egress.is_some(),
                "env" => p.env.is_some(),
                "continue_conversation" => p.continue_conversation.is_some(),
                "on_error" => p.has_on_error,
                "tests" => p.tests.is_some(),
                _ => false,
            };
            if present {
                out.push(key.to_string());
            }
        }
        out.extend(p.guards.iter().flatten().map(|g| g.name.clone()));
        out
    }

    /// Whether the policy defines `key` (a name from [`Self::hooks`], e.g. `verdict` or
    /// `guards[A -> B]`); cheaper than searching [`Self::hooks`] on every call.
    pub fn has_hook(&self, key: &str) -> bool {
        let Some(policy) = &self.lua else {
            return false;
        };
        let p = &policy.parsed;
        match key {
            "verdict" => p.verdict.is_some(),
            "salvage" => p.salvage.is_some(),
            "next_prompt" => p.next_prompt.is_some(),
            "audit_prompt" => p.audit_prompt.is_some(),
            "on_transition" => p.on_transition.is_some(),
            "on_notify" => p.on_notify.is_some(),
            "approve" => p.approve.is_some(),
            "permit" => p.permit.is_some(),
            "egress" => p.egress.is_some(),
            "checks" => p.checks.is_some(),
            guard => p.guards.iter().flatten().any(|g| g.name == guard),
        }
    }

    /// Where the hook `key` (as [`PolicyHost::has_hook`] names it) is defined, as `file:line`:
    /// what an error that Lua could not place (a bad return value, a budget, an error raised
    /// from C) is pinned to.
    pub fn hook_site(&self, key: &str) -> Option<String> {
        let policy = self.lua.as_ref()?;
        let p = &policy.parsed;
        let f = match key {
            "verdict" => p.verdict.as_ref(),
            "salvage" => p.salvage.as_ref(),
            "next_prompt" => p.next_prompt.as_ref(),
            "audit_prompt" => p.audit_prompt.as_ref(),
            "on_transition" => p.on_transition.as_ref(),
            "on_notify" => p.on_notify.as_ref(),
            "approve" => p.approve.as_ref(),
            "permit" => p.permit.as_ref(),
            "egress" => p.egress.as_ref(),
            guard => p
                .guards
                .iter()
                .flatten()
                .find(|g| g.name == guard)
                .map(|g| &g.func),
        }?;
        let info = f.info();
        let file = info.short_src?;
        let line = info.line_defined?;
        Some(format!("{file}:{line}"))
    }

    /// The guard registered for `from -> to`, if any.
    pub(super) fn guard_fn(
        &self,
        from: SessionState,
        to: SessionState,
    ) -> Option<(&str, &Function)> {
        let policy = self.lua.as_ref()?;
        let guard = policy.parsed.guards[schema::guard_slot(from, to)].as_ref()?;
        Some((&guard.name, &guard.func))
    }
}

impl std::fmt::Debug for PolicyHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyHost")
            .field("hash", &self.hash)
            .field("path", &self.path)
            .field("hooks", &self.hooks())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl LuaPolicy {
    /// Calls `f` under the wall-clock budget and maps any failure to a [`PolicyError`] that
    /// names `hook`.
    pub(super) fn call<R: FromLuaMulti>(
        &self,
        hook: &str,
        f: &Function,
        args: impl IntoLuaMulti,
    ) -> Result<R, PolicyError> {
        // The top level runs whole: a session needs its policy loaded before it can pause.
        let armed = self.budget.arm(hook != LOAD_HOOK);
        let result = f.call::<R>(args);
        let tripped = armed.tripped();
        let interrupted = armed.interrupted();
        drop(armed);
        if interrupted {
            let _ = self.lua.gc_collect();
            return Err(PolicyError::Interrupted {
                hook: hook.to_string(),
            });
        }
        match result {
            Ok(value) if !tripped => Ok(value),
            Ok(_) => Err(self.fail(hook, None, true)),
            Err(e) => Err(self.fail(hook, Some(e), tripped)),
        }
    }

    fn fail(&self, hook: &str, err: Option<mlua::Error>, tripped: bool) -> PolicyError {
        // Whatever the hook left behind is garbage now; collect it so a memory bomb in one call
        // does not starve the next.
        let _ = self.lua.gc_collect();
        let hook = hook.to_string();
        if tripped {
            return PolicyError::Budget {
                hook,
                budget: self.budget.limit,
            };
        }
        let mut err = err.expect("an error unless the budget tripped");
        while let mlua::Error::CallbackError { cause, .. }
        | mlua::Error::WithContext { cause, .. } = err
        {
            err = (*cause).clone();
        }
        match err {
            mlua::Error::MemoryError(_) => PolicyError::Memory {
                hook,
                limit: self.memory_limit,
            },
            mlua::Error::RuntimeError(message) => {
                let message = strip_traceback(&message);
                // Read-only tables (globals, libraries, `ctx`) and protected metatables (`ctx`,
                // the stubs) are the sandbox refusing a write.
                if message.contains(SANDBOX_MARKER)
                    || message.contains("readonly table")
                    || message.contains("protected metatable")
                {
                    PolicyError::Sandbox { hook, message }
                } else {
                    PolicyError::Runtime { hook, message }
                }
            }
            other => PolicyError::Runtime {
                hook,
                message: strip_traceback(&other.to_string()),
            },
        }
    }
}

/// mlua appends a Lua traceback; the first part is what a user needs, with its `file:line:`.
fn strip_traceback(message: &str) -> String {
    message
        .split("\nstack traceback:")
        .next()
        .unwrap_or(message)
        .trim()
        .to_string()
}

pub(super) fn syntax_error(name: &str, err: mlua::Error) -> PolicyError {
    let message = match &err {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    // Luau reports `name:line: message`; split it so the error has a structured line.
    let prefix = format!("{name}:");
    let parsed = message.strip_prefix(&prefix).and_then(|rest| {
        let (line, text) = rest.split_once(':')?;
        Some((line.trim().parse::<u32>().ok()?, text.trim().to_string()))
    });
    match parsed {
        Some((line, text)) => PolicyError::Load {
            file: name.to_string(),
            line: Some(line),
            message: text,
        },
        None => PolicyError::Load {
            file: name.to_string(),
            line: None,
            message: strip_traceback(&message),
        },
    }
}

/// Reads a policy (or test) file, naming it in the error.
pub(super) fn read_policy(path: &Path) -> Result<String, PolicyError> {
    std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// The chunk name for a file: its file name, so errors read `strict.lua:12`.
pub(super) fn chunk_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// `sha256:` and the first 16 hex digits of the source's digest.
fn content_hash(source: &str) -> String {
    short_hash(&Sha256::digest(source.as_bytes()))
}

fn short_hash(digest: &[u8]) -> String {
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}
