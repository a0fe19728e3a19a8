//! Shell completion: `oneshot completions SHELL` prints a small script that, at each TAB, runs
//! `oneshot` again with [`ENV`] set and the words of the line; oneshot answers from its own
//! clap definition and, where an id is expected, from the stores: session ids for `log`,
//! `status`, `resume`, `stop`, `--resume` and `policy replay`, job ids for `job show` and the
//! other job verbs, newest first.
//!
//! Why clap_complete's dynamic completion (`CompleteEnv`, its `unstable-dynamic` feature)
//! rather than the static scripts plus a hidden `oneshot __complete` the scripts call: ids
//! exist only at TAB time, so some call into the binary is needed either way, and the dynamic
//! engine already makes that call for all five shells and completes every command, option and
//! value from the same definition the parser uses; an id is one `ArgValueCandidates` on its
//! argument. A `__complete` hook would need hand-written glue per shell grafted onto generated
//! scripts. The price of "unstable": the protocol between script and binary may change with
//! clap_complete (Cargo.lock pins it), which is why docs/cli.md says to load the script when the
//! shell starts rather than save it.

use super::args::Cli;
use anyhow::{Context, Result};
use clap::{CommandFactory, FromArgMatches};
use clap_complete::engine::CompletionCandidate;
use oneshot::job::store::{ListFilter, StoreLocation};
use oneshot::store::Store;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that makes a run of `oneshot` a completion request (the shell,
/// e.g. `bash`). Not clap_complete's default `COMPLETE`: a variable of that common a name left
/// in an environment would turn every `oneshot` run there into a completion.
pub const ENV: &str = "ONESHOT_COMPLETE";

/// Answers a completion request and exits when this process is one ([`ENV`] set); else
/// returns at once.
pub fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(ENV)
        .complete();
}

/// `oneshot completions SHELL`: prints the script that registers the completion for `shell`.
pub fn script(shell: clap_complete::Shell) -> Result<i32> {
    let name = shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let completer = shells
        .completer(&name)
        .with_context(|| format!("write the completion script: {name} is not supported"))?;
    // The program the script calls back, as `CompleteEnv` would write it: a bare name is found
    // on PATH at TAB time, a path is made absolute.
    let program = PathBuf::from(
        std::env::args_os()
            .next()
            .unwrap_or_else(|| "oneshot".into()),
    );
    let program = match std::env::current_dir() {
        Ok(cwd) if program.components().count() > 1 => cwd.join(program),
        _ => program,
    };
    let mut script = Vec::new();
    completer
        .write_registration(
            ENV,
            "oneshot",
            "oneshot",
            &program.to_string_lossy(),
            &mut script,
        )
        .context("write the completion script")?;
    out!("{}", String::from_utf8_lossy(&script));
    Ok(0)
}

/// The sessions' ids, newest first, each with its state and task for the shells that show a
/// description (zsh, fish).
pub fn sessions() -> Vec<CompletionCandidate> {
    let Some(state_dir) = state_dir() else {
        return Vec::new();
    };
    let listed = Store::new(state_dir).list().unwrap_or_default();
    listed
        .into_iter()
        .enumerate()
        .map(|(i, (dir, summary))| {
            let help = summary
                .ok()
                .map(|s| format!("{} {}", s.state, first_line(&s.task)));
            CompletionCandidate::new(dir.id())
                .help(help.map(Into::into))
                .display_order(Some(i))
        })
        .collect()
}

/// What `say` takes: the sessions' ids (newest first), then the jobs' (newest first) — a
/// message goes to either.
pub fn sessions_and_jobs() -> Vec<CompletionCandidate> {
    let sessions = sessions();
    let after = sessions.len();
    let jobs = jobs()
        .into_iter()
        .enumerate()
        .map(|(i, c)| c.display_order(Some(after + i)));
    sessions.into_iter().chain(jobs).collect()
}

/// The jobs' ids, newest first, each with its state and title, from the store the line's
/// `--store` (or the config, or ONESHOT_STORE) names, as the command itself would open it.
pub fn jobs() -> Vec<CompletionCandidate> {
    let Some((words, effective)) = line_settings() else {
        return Vec::new();
    };
    let flag = last_flag(&words, "--store").and_then(|s| s.into_string().ok());
    let Ok((at, _)) =
        super::store::location(flag.as_deref(), &effective.files, &effective.state_dir)
    else {
        return Vec::new();
    };
    // Completing never creates a job store.
    if let StoreLocation::File(path) = &at
        && !path.is_file()
    {
        return Vec::new();
    }
    let Ok(mut jobs) = oneshot::job::store::open(&at).and_then(|s| s.list(&ListFilter::default()))
    else {
        return Vec::new();
    };
    jobs.sort_by(|a, b| {
        b.created_ms
            .cmp(&a.created_ms)
            .then_with(|| b.id.cmp(&a.id))
    });
    jobs.into_iter()
        .enumerate()
        .map(|(i, j)| {
            let help = format!("{} {}", j.state.as_str(), first_line(&j.title));
            CompletionCandidate::new(j.id)
                .help(Some(help.into()))
                .display_order(Some(i))
        })
        .collect()
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// The state directory of the line being completed, resolved as for any command: its
/// `--state-dir`, else ONESHOT_STATE_DIR, the config files, the default (`config::apply`
/// itself, on a line with that flag alone).
fn state_dir() -> Option<PathBuf> {
    line_settings().map(|(_, effective)| effective.state_dir)
}

/// The words of the line being completed, and the settings a command on it runs with (see
/// [`state_dir`]).
fn line_settings() -> Option<(Vec<OsString>, super::config::Effective)> {
    // The completion request's arguments: the program, `--`, then the words of the line.
    let words: Vec<OsString> = std::env::args_os()
        .skip_while(|a| a != "--")
        .skip(1)
        .collect();
    let mut line: Vec<OsString> = vec!["oneshot".into()];
    if let Some(dir) = last_flag(&words, "--state-dir") {
        line.extend(["--state-dir".into(), dir]);
    }
    line.push("list".into());
    let matches = Cli::command().try_get_matches_from(line).ok()?;
    let mut cli = Cli::from_arg_matches(&matches).ok()?;
    let effective = super::config::apply(&mut cli, &matches).ok()?;
    Some((words, effective))
}

/// The value of the last `FLAG VALUE` or `FLAG=VALUE` among `words` (`--state-dir`,
/// `--store`), before a `--`.
fn last_flag(words: &[OsString], flag: &str) -> Option<OsString> {
    let mut found = None;
    let mut words = words.iter();
    let prefix = format!("{flag}=");
    while let Some(w) = words.next() {
        if w == "--" {
            break;
        }
        if w == flag {
            found = words.next().cloned();
        } else if let Some(v) = w.to_str().and_then(|w| w.strip_prefix(prefix.as_str())) {
            found = Some(v.into());
        }
    }
    found.filter(|d| !Path::new(d).as_os_str().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_flag_counts() {
        let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            last_flag(&words(&["oneshot", "log", ""]), "--state-dir"),
            None
        );
        assert_eq!(
            last_flag(
                &words(&["oneshot", "--state-dir", "a", "log", "--state-dir=b"]),
                "--state-dir"
            ),
            Some("b".into())
        );
        assert_eq!(
            last_flag(
                &words(&["oneshot", "--state-dir", "a", "log", "--", "--state-dir=b"]),
                "--state-dir"
            ),
            Some("a".into())
        );
    }
}
