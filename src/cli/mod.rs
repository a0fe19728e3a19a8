//! The command-line interface.

#[macro_use]
pub mod out;
pub mod args;
pub mod config;
pub mod exit;
pub mod guard;
pub mod init;
pub mod policy;
pub mod run;
pub mod show;
pub mod signals;
pub mod term;
