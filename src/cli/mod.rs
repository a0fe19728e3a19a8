//! The command-line interface.

pub mod args;
pub mod policy;
pub mod run;
pub mod show;
pub mod term;
