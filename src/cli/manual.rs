//! `oneshot completions SHELL` and `oneshot man`: generated from the same clap definition the
//! parser uses, so they never drift from the real options.
//!
//! The man page is printed at run time rather than built into a file: a packager runs
//! `oneshot man > oneshot.1`, and a user who installed with `cargo install` has one without any
//! build step of ours.

use super::args::Cli;
use anyhow::{Context, Result};
use clap::CommandFactory;

/// Prints the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<i32> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "oneshot", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(0)
}

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
