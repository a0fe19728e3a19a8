//! The command-line interface.

pub mod args;
pub mod exit;
pub mod policy;
pub mod run;
pub mod show;
pub mod term;
