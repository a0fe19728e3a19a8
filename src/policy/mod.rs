//! The Lua policy host (Luau via mlua): sandbox, budgets, typed hook calls.

mod ctx;

pub use ctx::HookCtx;
