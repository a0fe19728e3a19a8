//! The command-line interface.

#[macro_use]
pub mod out;
pub mod args;
pub mod config;
pub mod exit;
pub mod guard;
pub mod init;
pub mod list;
pub mod policy;
pub mod prune;
pub mod run;
pub mod run_flags;
pub mod show;
pub mod signals;
pub mod stop;
pub mod term;
