//! The command-line interface.

#[macro_use]
pub mod out;
pub mod args;
pub mod color;
pub mod examples;
pub mod exit;
pub mod guard;
pub mod json_report;
pub mod manual;
pub mod outcome;
pub mod policy;
pub mod run;
pub mod sanitize;
pub mod show;
pub mod signals;
pub mod statusline;
pub mod term;
