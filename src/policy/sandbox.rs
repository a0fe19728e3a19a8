//! The Luau state a policy runs in: curated libraries, stubs that explain what is withheld,
//! read-only globals, a memory cap, and a wall-clock budget enforced by Luau's interrupt.

use super::lua_ctx::LAZY_REGISTRY;
use super::watchdog::{Watchdog, WatchdogOptions};
use mlua::{Lua, LuaOptions, StdLib, Variadic, VmState};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How many times hooks were cut short by [`interrupt_hooks`]; a call armed before the count
/// moved was running when it did.
static CUTS: AtomicU64 = AtomicU64::new(0);

/// Cuts short every policy hook running in this process now — the user's Ctrl-C: each fails
/// with [`super::PolicyError::Interrupted`] at its next instruction, and hooks started
/// afterwards run as usual. One atomic add, so a signal handler may call it: a hook runs on
/// the thread that would otherwise deliver the signal, and a 5 s hook must not make the user
/// wait 5 s.
pub fn interrupt_hooks() {
    CUTS.fetch_add(1, Ordering::SeqCst);
}

/// The phrase every sandbox stub raises; errors containing it are reported as
/// [`super::PolicyError::Sandbox`].
pub(crate) const SANDBOX_MARKER: &str = "is not available in oneshot policies (sandboxed)";

/// The message the interrupt raises; the `tripped` flag, not this text, is what marks a budget
/// error (a policy could catch and re-raise the text with `pcall`).
const BUDGET_MESSAGE: &str = "policy hook ran past its time budget";

/// Runs before `sandbox(true)` so its changes become part of the read-only globals. Stubs raise
/// at level 2 so the message carries the policy's file and line, not the stub's.
const PRELUDE: &str = r#"
local MSG = " is not available in oneshot policies (sandboxed)"
local error, tostring, setmetatable = error, tostring, setmetatable
local function deny(name)
  return function() error(name .. MSG, 2) end
end
local function deny_table(name)
  return setmetatable({}, {
    __index = function() error(name .. MSG, 2) end,
    __newindex = function() error(name .. MSG, 2) end,
    __metatable = false,
  })
end
for _, name in ipairs({"io", "debug", "package", "ffi", "jit"}) do
  _G[name] = deny_table(name)
end
for _, name in ipairs({"loadstring", "load", "dofile", "loadfile", "getfenv", "setfenv", "module"}) do
  _G[name] = deny(name)
end
string.dump = deny("string.dump")
-- Keep only the clock and calendar functions of os; everything else names itself.
local os_lib = os
local safe_os = { clock = os_lib.clock, time = os_lib.time, date = os_lib.date, difftime = os_lib.difftime }
_G.os = setmetatable(safe_os, {
  __index = function(_, k) error("os." .. tostring(k) .. MSG, 2) end,
  __metatable = false,
})
-- Tables whose fields are built on first read (a hook's `ctx`) map to a function that builds
-- them all, so `pairs` sees every field. Rust registers them (see `lua_ctx.rs`).
local rawpairs, lazy = pairs, setmetatable({}, { __mode = "k" })
_G.pairs = function(t)
  local fill = lazy[t]
  if fill then fill(t) end
  return rawpairs(t)
end
return lazy
"#;

/// The per-call wall-clock budget. The interrupt closure is installed once and reads the
/// deadline from a shared cell, so arming a call costs one `Instant::now()`.
pub(crate) struct Budget {
    deadline: Rc<Cell<Option<Instant>>>,
    tripped: Rc<Cell<bool>>,
    /// [`CUTS`] when the running call was armed.
    cuts: Rc<Cell<u64>>,
    /// The running call was cut short by [`interrupt_hooks`].
    interrupted: Rc<Cell<bool>>,
    /// The running call may be cut short (a hook; not the policy's top level, which a session
    /// needs whole before it can pause).
    interruptible: Rc<Cell<bool>>,
    /// The budget each call gets.
    pub limit: Duration,
    /// Backs the interrupt up for native code that never polls it.
    watchdog: Option<Watchdog>,
}

impl Budget {
    fn install(lua: &Lua, limit: Duration, watchdog: Option<WatchdogOptions>) -> Budget {
        let watchdog = watchdog.and_then(|opts| {
            Watchdog::start(opts)
                .inspect_err(|e| tracing::warn!("failed to start the policy watchdog: {e}"))
                .ok()
        });
        let budget = Budget {
            deadline: Rc::new(Cell::new(None)),
            tripped: Rc::new(Cell::new(false)),
            cuts: Rc::new(Cell::new(0)),
            interrupted: Rc::new(Cell::new(false)),
            interruptible: Rc::new(Cell::new(false)),
            limit,
            watchdog,
        };
        let (deadline, tripped) = (budget.deadline.clone(), budget.tripped.clone());
        let (cuts, interrupted) = (budget.cuts.clone(), budget.interrupted.clone());
        let interruptible = budget.interruptible.clone();
        lua.set_interrupt(move |_| {
            if deadline.get().is_some()
                && interruptible.get()
                && CUTS.load(Ordering::Relaxed) != cuts.get()
            {
                interrupted.set(true);
                return Err(mlua::Error::runtime("policy hook interrupted"));
            }
            if let Some(at) = deadline.get()
                && Instant::now() >= at
            {
                tripped.set(true);
                return Err(mlua::Error::runtime(BUDGET_MESSAGE));
            }
            Ok(VmState::Continue)
        });
        budget
    }

    /// Starts the clock for one call; the returned guard stops it when dropped. An
    /// `interruptible` call is also cut short by [`interrupt_hooks`].
    pub(crate) fn arm(&self, interruptible: bool) -> Armed<'_> {
        self.tripped.set(false);
        self.interrupted.set(false);
        self.interruptible.set(interruptible);
        self.cuts.set(CUTS.load(Ordering::SeqCst));
        let deadline = Instant::now() + self.limit;
        self.deadline.set(Some(deadline));
        if let Some(w) = &self.watchdog {
            w.arm(deadline);
        }
        Armed(self)
    }
}

/// A running budget; see [`Budget::arm`].
pub(crate) struct Armed<'a>(&'a Budget);

impl Armed<'_> {
    /// Whether the interrupt fired during this call, even if the policy caught the error.
    pub(crate) fn tripped(&self) -> bool {
        self.0.tripped.get()
    }

    /// Whether [`interrupt_hooks`] cut this call short, even if the policy caught the error.
    pub(crate) fn interrupted(&self) -> bool {
        self.0.interrupted.get()
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        self.0.deadline.set(None);
        if let Some(w) = &self.0.watchdog {
            w.disarm();
        }
    }
}

/// A fresh sandboxed state with the memory cap set and the budget interrupt installed.
/// `install` adds the host's own globals (`require`, `oneshot`) before the globals are frozen.
pub(crate) fn new_state(
    memory_limit: usize,
    hook_budget: Duration,
    watchdog: Option<WatchdogOptions>,
    install: impl FnOnce(&Lua) -> mlua::Result<()>,
) -> mlua::Result<(Lua, Budget)> {
    let libs = StdLib::COROUTINE
        | StdLib::STRING
        | StdLib::TABLE
        | StdLib::MATH
        | StdLib::UTF8
        | StdLib::BIT
        | StdLib::OS;
    let lua = Lua::new_with(libs, LuaOptions::default())?;
    install_print(&lua)?;
    let lazy_tables: mlua::Table = lua.load(PRELUDE).set_name("=oneshot-sandbox").eval()?;
    lua.set_named_registry_value(LAZY_REGISTRY, lazy_tables)?;
    install(&lua)?;
    lua.sandbox(true)?;
    lua.set_memory_limit(memory_limit)?;
    let budget = Budget::install(&lua, hook_budget, watchdog);
    Ok((lua, budget))
}

/// `print` goes to the tracing log: a policy must never write into the CLI's own output.
fn install_print(lua: &Lua) -> mlua::Result<()> {
    let print = lua.create_function(|_, args: Variadic<mlua::Value>| {
        let line: Vec<String> = args
            .iter()
            .map(|v| {
                v.to_string()
                    .unwrap_or_else(|_| format!("<{}>", v.type_name()))
            })
            .collect();
        tracing::info!(target: "oneshot::policy", "{}", line.join("\t"));
        Ok(())
    })?;
    lua.globals().raw_set("print", print)
}
