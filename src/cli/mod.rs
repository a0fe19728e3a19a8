//! The command-line interface.

pub mod args;
pub mod run;
pub mod show;
pub mod term;
