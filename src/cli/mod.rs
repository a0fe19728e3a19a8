//! The command-line interface.

#[macro_use]
pub mod out;
pub mod account;
pub mod args;
pub mod ask;
pub mod color;
pub mod complete;
pub mod config;
pub mod cost;
pub mod eval;
pub mod examples;
pub mod exit;
pub mod guard;
pub mod init;
pub mod iterations;
pub mod job;
pub mod json_report;
pub mod list;
pub mod log;
pub mod manual;
pub mod outcome;
pub mod policy;
pub mod prune;
pub mod run;
pub mod run_flags;
pub mod saboteur;
pub mod sanitize;
pub mod schema;
pub mod show;
pub mod signals;
pub mod statusline;
pub mod stop;
pub mod store;
pub mod term;
pub mod token;
pub mod typo;
