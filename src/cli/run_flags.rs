//! Run options given to a command that does not run a session.
//!
//! `oneshot --worker-cmd x list` parses (the run options sit at the top level, for
//! `oneshot [OPTIONS] TASK`), and `list` would silently ignore them: the user believes they
//! took effect. Only options typed on the command line count — the same options also come from
//! `ONESHOT_*` environment variables, which are meant for every command.

use super::args::{ResumeArgs, RunArgs};
use super::exit::usage;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args};

/// Refuses top-level run options (`--policy`, `--worker-cmd`, …) typed before a subcommand,
/// naming the first one. `run` takes them after its name, `resume` some of them after its
/// name; `config` shows their effect; other commands do not take them.
pub fn check(matches: &ArgMatches) -> anyhow::Result<()> {
    let Some(name) = matches.subcommand_name() else {
        return Ok(());
    };
    if name == "config" {
        // `oneshot --max-iterations 2 config` shows what a session would get with them.
        return Ok(());
    }
    // The run options as clap knows them, so a new one is covered without a list to update.
    let options = RunArgs::augment_args(clap::Command::new("run"));
    let given = options.get_arguments().find(|a| {
        a.get_long().is_some()
            && matches.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine)
    });
    let Some(arg) = given else {
        return Ok(());
    };
    let flag = format!("--{}", arg.get_long().unwrap_or_default());
    let long = arg.get_long().unwrap_or_default();
    let resume_takes_it = ResumeArgs::augment_args(clap::Command::new("resume"))
        .get_arguments()
        .any(|a| a.get_long() == Some(long));
    Err(usage(match name {
        "resume" if resume_takes_it => format!(
            "read the command line: {flag} was given before `resume`, where it is not read; put \
             it after `resume` (oneshot resume {flag} … ID)"
        ),
        "run" => format!(
            "read the command line: {flag} was given before `run`, where it is not read; put it \
             after `run` (oneshot run {flag} … \"the task\")"
        ),
        _ => format!(
            "read the command line: {flag} is an option of a new session, which `oneshot \
             {name}` does not start; remove it, or start a session with oneshot {flag} … \
             \"the task\""
        ),
    }))
}
