//! `oneshot man`: generated from the same clap definition the parser uses, so it never drifts
//! from the real options (nor do the completions, `super::complete`).
//!
//! The man page is printed at run time rather than built into a file: a packager runs
//! `oneshot man > oneshot.1`, and a user who installed with `cargo install` has one without any
//! build step of ours.

use super::args::Cli;
use anyhow::{Context, Result};
use clap::CommandFactory;

/// Prints the manual page, as roff, on stdout: `oneshot man | man -l -`. It lists every
/// subcommand; each one's options are in its `--help`.
pub fn man() -> Result<i32> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .context("render the manual page")?;
    out!("{}", String::from_utf8_lossy(&page));
    Ok(0)
}
