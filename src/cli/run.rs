//! `oneshot [run] PROMPT` and `oneshot resume ID`.

use super::args::{PolicyArgs, ResumeArgs, RunArgs};
use super::color;
use super::exit::{self, usage};
use super::json_report::{self, JsonReporter};
use super::outcome;
use super::sanitize;
use super::signals::{self, Signals};
use super::statusline::clock;
use super::term::{TerminalReporter, short_id};
use anyhow::{Context, Result};
use oneshot::agent::AgentSpec;
use oneshot::engine::{Engine, Options, SessionBuilder};
use oneshot::machine::SessionState;
use oneshot::policy::{PolicyHost, PolicyOptions};
use oneshot::session::{Outcome, Role, Session, SessionSettings};
use oneshot::store::Store;
use std::path::Path;

fn load_policy(path: Option<&Path>, opts: PolicyOptions) -> Result<PolicyHost> {
    Ok(PolicyHost::load_or_builtin(path, opts)?)
}

/// What to write when there is no task: a usage error.
const NO_TASK: &str = "start a session: no task given; write it last, e.g. oneshot --worker-cmd \
                       'sh fix.sh' --auditor-cmd 'sh check.sh' \"the task\" (see oneshot --help)";

/// Checks a task given without the `run` subcommand (`oneshot TASK`): an empty one, or one word
/// that looks like a mistyped command (`oneshot stauts`), must not start an agent.
pub fn check_implicit_task(task: &str) -> Result<()> {
    let word = task.trim();
    if word.is_empty() {
        return Err(usage(
            "start a session: the task is empty; say what the worker should do",
        ));
    }
    if !word.contains(char::is_whitespace)
        && let Some(command) = super::typo::command_like(word)
    {
        return Err(usage(format!(
            "start a session with the task {word:?}: it looks like a mistyped command; did you \
             mean `oneshot {command}`? (To run that one-word task, write `oneshot run {word}`.)"
        )));
    }
    Ok(())
}

/// The task: as given, from `--task-file FILE`, or from stdin for `-`. Whatever cannot be
/// read as text is a usage error naming where it was read from.
fn read_task(prompt: Option<String>, task_file: Option<&Path>) -> Result<String> {
    let (bytes, from) = match (prompt, task_file) {
        (Some(_), Some(file)) => {
            return Err(usage(format!(
                "start a session: both a task and --task-file {} were given; give one of them",
                file.display()
            )));
        }
        (None, None) => return Err(usage(NO_TASK)),
        (Some(task), None) if task != "-" => return Ok(task),
        (Some(_), None) => {
            let stdin = std::io::stdin();
            if std::io::IsTerminal::is_terminal(&stdin) {
                return Err(usage(
                    "read the task from stdin (`-`): stdin is a terminal; pipe the task in \
                     (echo 'fix it' | oneshot … -) or use --task-file FILE",
                ));
            }
            let mut bytes = Vec::new();
            interruptible(|| std::io::Read::read_to_end(&mut stdin.lock(), &mut bytes))
                .map_err(|e| usage(format!("read the task from stdin: {e}")))?;
            (bytes, "stdin".to_string())
        }
        (None, Some(file)) => {
            let bytes = std::fs::read(file).map_err(|e| {
                usage(format!(
                    "read the task file {}: {e}; check the path (relative paths start at the \
                     current directory)",
                    file.display()
                ))
            })?;
            (bytes, file.display().to_string())
        }
    };
    let task = String::from_utf8(bytes).map_err(|e| {
        usage(format!(
            "read the task from {from}: it is not UTF-8 text (invalid byte at offset {}); convert \
             it to UTF-8 (e.g. with iconv -t UTF-8)",
            e.utf8_error().valid_up_to()
        ))
    })?;
    if task.trim().is_empty() {
        return Err(usage(format!(
            "start a session: the task read from {from} is empty; say what the worker should do"
        )));
    }
    Ok(task)
}

/// Runs `f` (a blocking read) with Ctrl-C, SIGTERM and SIGHUP ending oneshot as usual: the
/// session's handlers only count them, and a read waiting on a pipe that never closes would
/// then ignore them. No session exists yet, so there is nothing to pause; the handlers come
/// back afterwards.
fn interruptible<T>(f: impl FnOnce() -> T) -> T {
    const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    // SAFETY: plain sigaction calls; every saved action is restored as it was.
    unsafe {
        let mut saved: [libc::sigaction; 3] = std::mem::zeroed();
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for (sig, old) in SIGNALS.iter().zip(saved.iter_mut()) {
            libc::sigaction(*sig, &default, old);
        }
        let out = f();
        for (sig, old) in SIGNALS.iter().zip(saved.iter()) {
            libc::sigaction(*sig, old, std::ptr::null_mut());
        }
        out
    }
}

/// Starts a new session and runs it to the end; returns the exit code.
pub fn run(store: &Store, args: RunArgs, quiet: bool, signals: Signals) -> Result<i32> {
    let prompt = read_task(args.prompt, args.task_file.as_deref())?;
    if prompt.trim().is_empty() {
        return Err(usage(
            "start a session: the task is empty; say what the worker should do",
        ));
    }
    let worker = role_choice(
        Role::Worker,
        args.worker.as_deref(),
        args.worker_cmd,
        args.worker_arg,
    )?;
    let auditor = role_choice(
        Role::Auditor,
        args.auditor.as_deref(),
        args.auditor_cmd,
        args.auditor_arg,
    )?;
    let options = args.policy_opts.options(&SessionSettings::default());
    let policy = load_policy(args.policy.as_deref(), options.policy_options.clone())?;
    let workdir = match args.workdir {
        Some(d) => d,
        None => std::env::current_dir().context("read the current directory")?,
    };
    if !workdir.is_dir() {
        return Err(usage(format!(
            "use workdir {}: it is not an existing directory; create it or pass another --workdir",
            workdir.display()
        )));
    }
    let face = if args.json {
        Face::Json
    } else {
        Face::Terminal {
            quiet,
            raw: args.raw,
        }
    };
    drive(face, signals, options, |options| {
        let builder = match worker {
            Choice::Agent(a) => SessionBuilder::new(prompt).worker_agent(a),
            Choice::Command(c) => SessionBuilder::new(prompt).worker(c),
        };
        let builder = match auditor {
            Choice::Agent(a) => builder.auditor_agent(a),
            Choice::Command(c) => builder.auditor(c),
        };
        builder
            .workdir(workdir)
            .policy(policy)
            .options(options)
            .create(store)
    })
}

/// What plays a role: an agent CLI, or a command line.
enum Choice {
    Agent(AgentSpec),
    Command(String),
}

/// Reads `--worker`/`--auditor` (`AGENT[:MODEL]` or `cmd`), its `--…-arg`s and `--…-cmd`.
fn role_choice(
    role: Role,
    agent: Option<&str>,
    cmd: Option<String>,
    extra: Vec<String>,
) -> Result<Choice> {
    let flag = role.as_str();
    let agent = agent.map(str::trim).filter(|a| !a.is_empty());
    match agent {
        Some(a) if a.eq_ignore_ascii_case("cmd") => {}
        Some(a) => {
            let mut spec =
                AgentSpec::parse(a).map_err(|e| usage(format!("use --{flag} {a}: {e}")))?;
            spec.args = extra;
            return Ok(Choice::Agent(spec));
        }
        None => {}
    }
    if !extra.is_empty() {
        return Err(usage(format!(
            "use --{flag}-arg: it adds arguments to an agent's command line, and the {flag} is \
             a command line; put them in --{flag}-cmd or choose an agent with --{flag} AGENT"
        )));
    }
    match cmd {
        Some(c) => Ok(Choice::Command(c)),
        None => Err(usage(format!(
            "start a session: it needs {article} {flag}: --{flag} AGENT[:MODEL] (claude, codex, gemini, \
             aider, cline) or --{flag}-cmd CMDLINE (also ONESHOT_{up} / ONESHOT_{up}_CMD, or {flag} / \
             {flag}-cmd in oneshot.toml), e.g. --{flag} claude or --{flag}-cmd 'sh {ex}.sh'",
            up = flag.to_ascii_uppercase(),
            article = if role == Role::Worker { "a" } else { "an" },
            ex = if role == Role::Worker { "fix" } else { "check" },
        ))),
    }
}

/// Resumes a session; returns the exit code.
pub fn resume(store: &Store, args: ResumeArgs, quiet: bool, signals: Signals) -> Result<i32> {
    // Without an id, the latest session, as `status` and `log` take it; a named one that does
    // not exist is reported by the resume itself.
    let id = match args.id {
        Some(id) => id,
        None => super::show::session_or_latest(store, None, "resume the latest session")?
            .id()
            .to_owned(),
    };
    // The session's own settings, unless the command line says otherwise. A state file that
    // cannot be read is reported by the resume itself.
    let recorded = store
        .open(&id)
        .and_then(|dir| dir.read_state())
        .map(|s| s.settings)
        .unwrap_or_default();
    let options = args.policy_opts.options(&recorded);
    let policy = match args.policy {
        Some(p) => Some(load_policy(
            Some(p.as_path()),
            options.policy_options.clone(),
        )?),
        None => None,
    };
    let face = Face::Terminal {
        quiet,
        raw: args.raw,
    };
    drive(face, signals, options, |options| {
        Engine::resume(store, &id, policy, options)
    })
}

impl PolicyArgs {
    /// The engine's options: what the command line gives, else `recorded`.
    fn options(&self, recorded: &SessionSettings) -> Options {
        let mut options = Options::from_settings(recorded);
        if let Some(budget) = self.hook_budget {
            options.policy_options.hook_budget = budget;
        }
        if !self.policy_path.is_empty() {
            options.policy_options.module_paths = self.policy_path.clone();
        }
        if let Some(mode) = self.policy_reload {
            options.reload = mode;
        }
        if let Some(on) = self.sandbox {
            options.sandbox = on;
        }
        if let Some(network) = self.network {
            options.network = network;
        }
        if !self.check.is_empty() {
            options.checks = self
                .check
                .iter()
                .map(|c| oneshot::check::Check::command(c))
                .collect();
        }
        options.limits = self.limit_overrides(&options.limits);
        options
    }
}

/// How a session shows while it runs.
#[derive(Clone, Copy)]
enum Face {
    /// Agent output on stdout, transitions and a status line on stderr (or only the outcome).
    Terminal {
        /// `--quiet`.
        quiet: bool,
        /// `--raw`: an agent's protocol lines instead of its account.
        raw: bool,
    },
    /// NDJSON on stdout (`run --json`), nothing on stderr but errors and warnings of oneshot's
    /// own.
    Json,
}

fn drive(
    face: Face,
    signals: Signals,
    options: Options,
    make: impl FnOnce(Options) -> Result<Engine, oneshot::engine::EngineError>,
) -> Result<i32> {
    let (rt, streams, early) = signals.split();
    // Created inside the runtime: the engine's own tasks and timers belong to it.
    let mut engine = {
        let _inside = rt.enter();
        make(options)?
    };
    match face {
        Face::Terminal { quiet: false, .. } => errln!(
            "oneshot: session {} ({})",
            engine.id(),
            engine.session().workdir.display()
        ),
        Face::Terminal { quiet: true, .. } => {}
        Face::Json => json_report::session(engine.id(), &engine.session().workdir),
    }
    let interrupt = engine.interrupter();
    // Cleans up after the agents if oneshot is killed (see `guard`).
    let guard = super::guard::start(engine.id(), &engine.lock_path());
    let outcome = rt.block_on(async {
        // A signal that came while the policy loaded or the session was made is delivered now.
        let forwarding = tokio::spawn(signals::forward(streams, interrupt, early));
        let outcome = match face {
            Face::Terminal { quiet, raw } => {
                engine.run(&mut TerminalReporter::new(quiet, raw)).await
            }
            Face::Json => engine.run(&mut JsonReporter).await,
        };
        forwarding.abort();
        outcome
    });
    if let Some(g) = guard {
        super::guard::stop(g);
    }
    let outcome = outcome?;
    let code = exit::for_outcome(&outcome);
    match face {
        Face::Terminal { .. } => report(&outcome, engine.session()),
        Face::Json => json_report::outcome(&outcome, engine.session(), code),
    }
    Ok(code)
}

/// The final line: the state, the cause of a failure as well as its last reason, the
/// iterations used and the time taken.
fn report(o: &Outcome, session: &Session) {
    let id = &o.session_id;
    let mut why = String::new();
    if let Some(cause) = outcome::cause(session) {
        why.push_str(&format!(": {cause}"));
    }
    if let Some(r) = &o.reason {
        why.push_str(if why.is_empty() { ": " } else { ", then " });
        why.push_str(&r.to_string());
    }
    let mut spent = format!(
        "{} of {} iterations, {}",
        session.iteration,
        session.max_iterations,
        clock(outcome::elapsed(session))
    );
    if let Some(used) = super::cost::long(&session.agents.spent) {
        spent.push_str(&format!(", {used}"));
    }
    // The reason can quote an agent (a verdict's critique): no control sequences in it.
    let why = sanitize::clean(&why);
    let state = color::state(o.state);
    match o.state {
        SessionState::Failed if session.phase.retake().is_some() => errln!(
            "oneshot: session {id} {state}{why} ({spent})\n  it failed only because its policy \
             failed: fix the policy, then `oneshot resume {}` (or add --policy FILE) asks the \
             failed question again and keeps the work",
            short_id(id)
        ),
        SessionState::Completed | SessionState::Failed => {
            errln!("oneshot: session {id} {state}{why} ({spent})")
        }
        SessionState::Rejected => errln!(
            "oneshot: session {id} {state}{why} ({spent})\n  the auditor judged the task \
             impossible; start a new session with a changed task"
        ),
        _ => errln!(
            "oneshot: session {id} paused in {state} ({spent}); continue with `oneshot resume {}`",
            short_id(id)
        ),
    }
}

/// Refuses a bare `oneshot` with no task and no subcommand, pointing at --help.
pub fn nothing_to_do() -> Result<i32> {
    Err(usage(NO_TASK))
}
