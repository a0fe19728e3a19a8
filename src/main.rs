//! The `oneshot` command: a thin layer mapping arguments to library calls.

mod cli;

use clap::{CommandFactory, FromArgMatches};
use cli::args::{Cli, Command, ResumeArgs};
use oneshot::store::Store;

fn main() {
    // Its environment (an API key the proxy holds for the agents) and memory are not for
    // another process of the same user to read through /proc: an agent confined by Landlock
    // alone could otherwise. The reaper, a fork, inherits it; the guard runs this first too.
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with plain integers; it changes only this process's dumpable flag.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    // An empty ONESHOT_* variable (`ONESHOT_STATE_DIR=`) means unset, as users expect of an
    // environment default, not "a value is required".
    for (name, value) in std::env::vars_os() {
        if value.is_empty() && name.to_string_lossy().starts_with("ONESHOT_") {
            // SAFETY: no other thread runs yet: this is the first thing `main` does after a
            // prctl, before anything that could start one.
            unsafe { std::env::remove_var(&name) };
        }
    }
    // A guard (see `cli::guard`) has one job and no command line.
    if let Some(session) = std::env::var_os(cli::guard::GUARD_ENV) {
        cli::guard::run(&session.to_string_lossy());
    }
    // A TAB in a shell with oneshot's completion loaded (see `cli::complete`).
    cli::complete::answer_if_asked();
    cli::signals::catch_early();
    // The matches are kept: they tell a flag from an environment variable (`cli::config`).
    let (mut cli, matches) = match Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)))
    {
        Ok(parsed) => parsed,
        Err(e) => cli::args::explain(e),
    };
    if let Err(e) = cli::run_flags::check(&matches) {
        fail(e);
    }
    cli::color::init(cli.global.color);
    if cli.command.is_some()
        && let Some(task) = &cli.run.prompt
    {
        fail(cli::exit::usage(format!(
            "start a session: a task ({task:?}) and a command were given together; run the task \
             with `oneshot run {:?}`, or the command alone",
            task
        )));
    }
    // A session's signal handlers go in first, before anything slow (see `cli::signals`).
    let starts_session = match &cli.command {
        Some(Command::Run(_) | Command::Resume(_)) => true,
        // A runner drives sessions: the same handlers, so a Ctrl-C pauses them.
        Some(Command::Job(j)) => j.command.runs_steps(),
        Some(_) => false,
        None => cli.run.resume.is_some() || cli.run.prompt.is_some() || cli.run.task_file.is_some(),
    };
    if !starts_session {
        cli::signals::release_early();
    }
    let mut signals = match starts_session.then(cli::signals::Signals::install) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => fail(e),
    };
    let mut signals_for = move || signals.take();
    init_tracing(cli.global.verbose);
    let effective = match cli::config::apply(&mut cli, &matches) {
        Ok(e) => e,
        Err(e) => fail(e),
    };
    let store = Store::new(effective.state_dir.clone());
    let quiet = cli.global.quiet;
    let result = match cli.command {
        // `run --resume ID` is `resume ID`, as the top-level `--resume` is.
        Some(Command::Run(args)) if args.resume.is_some() => cli::run::resume(
            &store,
            ResumeArgs {
                id: args.resume.clone(),
                policy: args.policy.clone(),
                raw: args.raw,
                policy_opts: args.policy_opts.clone(),
            },
            quiet,
            signals_for().expect("installed for session commands"),
        ),
        Some(Command::Run(args)) => cli::run::run(
            &store,
            args,
            quiet,
            signals_for().expect("installed for session commands"),
        ),
        Some(Command::Resume(args)) => cli::run::resume(
            &store,
            args,
            quiet,
            signals_for().expect("installed for session commands"),
        ),
        Some(Command::Status { id, json }) => cli::show::status(&store, id.as_deref(), json),
        Some(Command::List { json, limit, state }) => cli::list::list(
            &store,
            cli::list::ListArgs {
                json,
                limit,
                states: state,
            },
        ),
        Some(Command::Show {
            id,
            iteration,
            full,
            json,
        }) => cli::iterations::show(
            &store,
            cli::iterations::ShowArgs {
                id,
                iteration,
                full,
                json,
            },
        ),
        Some(Command::Log {
            id,
            follow,
            json,
            raw,
        }) => cli::log::log(&store, id.as_deref(), follow, json, raw),
        Some(Command::Policy(cmd)) => cli::policy::run(&store, cmd),
        Some(Command::Schema(args)) => cli::schema::run(args),
        Some(Command::Job(args)) => cli::job::run(
            args,
            &effective.state_dir,
            &effective.files,
            quiet,
            signals_for(),
        ),
        Some(Command::Store(args)) => {
            cli::store::run(args, &effective.files, &effective.state_dir, quiet)
        }
        Some(Command::Token(args)) => {
            cli::token::run(args, &effective.files, &effective.state_dir, quiet)
        }
        Some(Command::Serve(args)) => {
            cli::serve::run(args, &effective.files, &effective.state_dir, quiet)
        }
        Some(Command::Ask(args)) => cli::ask::run(args, &effective.files),
        Some(Command::Eval(args)) => cli::eval::run(args, &effective.files),
        Some(Command::Saboteur(args)) => cli::saboteur::run(args),
        Some(Command::Prune {
            older_than,
            dry_run,
        }) => cli::prune::prune(&store, older_than, dry_run),
        Some(Command::Say {
            id,
            text,
            file,
            now,
            wait,
            store: store_flag,
        }) => cli::say::say(
            &store,
            cli::say::SayArgs {
                id,
                text,
                file,
                now,
                wait,
            },
            cli::say_job::Jobs {
                flag: store_flag.store,
                files: &effective.files,
                state_dir: &effective.state_dir,
            },
        ),
        Some(Command::Stop { id, wait, no_wait }) => cli::stop::stop(
            &store,
            &id,
            cli::stop::StopArgs {
                wait: (!no_wait).then_some(wait),
            },
        ),
        Some(Command::Config { json }) => cli::config::show(&cli, &effective, json),
        Some(Command::Init { ref dir, force }) => cli::init::run(dir, force),
        Some(Command::Completions { shell }) => cli::complete::script(shell),
        Some(Command::Man) => cli::manual::man(),
        None => match cli.run.resume.clone() {
            Some(id) => cli::run::resume(
                &store,
                ResumeArgs {
                    id: Some(id),
                    policy: cli.run.policy.clone(),
                    raw: cli.run.raw,
                    policy_opts: cli.run.policy_opts.clone(),
                },
                quiet,
                signals_for().expect("installed for session commands"),
            ),
            None if cli.run.prompt.is_some() || cli.run.task_file.is_some() => {
                let task = cli.run.prompt.as_deref();
                task.map_or(Ok(()), cli::run::check_implicit_task)
                    .and_then(|()| {
                        cli::run::run(
                            &store,
                            cli.run,
                            quiet,
                            signals_for().expect("installed for session commands"),
                        )
                    })
            }
            None => cli::run::nothing_to_do(),
        },
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => fail(e),
    }
}

/// Reports a stopping error and exits with its code.
fn fail(e: anyhow::Error) -> ! {
    // Every error reads after "failed to …" and carries its causes as its chain, which `{:#}`
    // prints once each, joined by ": " (see `oneshot::error`).
    cli::out::stderr(format_args!(
        "oneshot: {} failed to {e:#}\n",
        cli::color::error()
    ));
    std::process::exit(cli::exit::for_error(&e));
}

/// oneshot's diagnostics at the level `-v` asks for. Dependencies (notify, mlua, tokio…)
/// stay at warnings until `-vvv`: their debug lines bury oneshot's own. RUST_LOG overrides.
fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "oneshot=info,warn",
        2 => "oneshot=debug,warn",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| cli::out::RedactingStderr)
        .with_ansi(cli::color::on())
        .event_format(Voice)
        .init();
}

/// oneshot's diagnostics in the CLI's voice. What the library logs at WARN or ERROR never stops
/// anything (whatever stops a command comes back as an error, printed by `main` as
/// `oneshot: error: failed to …`), so both read `oneshot: warning: …`; `-v` detail names its
/// level and module.
struct Voice;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Voice
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        match *meta.level() {
            tracing::Level::ERROR | tracing::Level::WARN => {
                write!(writer, "oneshot: {} ", cli::color::warning())?
            }
            level => write!(
                writer,
                "oneshot: {} {}: ",
                level.as_str().to_lowercase(),
                meta.target()
            )?,
        }
        tracing_subscriber::fmt::FormatFields::format_fields(ctx, writer.by_ref(), event)?;
        writeln!(writer)
    }
}
