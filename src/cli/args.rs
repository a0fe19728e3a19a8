//! Command-line arguments.

use super::examples;
use clap::{Args, Parser, Subcommand};
use clap_complete::engine::ArgValueCandidates;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  oneshot --worker-cmd 'sh fix.sh' --auditor-cmd 'sh check.sh' \"make the tests pass\"
  oneshot --policy policies/strict.lua --worker-cmd 'sh fix.sh' --auditor-cmd 'sh check.sh' \"fix the failing test\"
  oneshot --worker-cmd 'sh fix.sh' --auditor-cmd 'sh check.sh' --task-file TASK.md
  git diff | oneshot --worker-cmd 'sh fix.sh' --auditor-cmd 'sh check.sh' -   # the task from stdin
  oneshot status            # the latest session
  oneshot log ID --follow   # tail a running session
  oneshot resume ID         # continue after Ctrl-C or a crash

How a session runs: the worker gets the task (on stdin and in the file $ONESHOT_PROMPT_FILE; also
in $ONESHOT_PROMPT and as {prompt} in its argv up to 100 KiB); when it exits 0 the auditor gets the
task and the worker's output and must end its stdout with a line VERDICT: DONE | RETRY | IMPOSSIBLE
(or a JSON object with a \"verdict\" field); its stderr is logged but never read as a verdict.
RETRY runs the worker again with the critique. A policy file (Lua) can change every one of these decisions.";

/// A command line clap refused. An unknown word where a verb of a command group stands
/// (`oneshot job aprove ID`) is a mistyped verb: name the nearest one, as `oneshot stauts` gets
/// (see `super::typo`). An unknown word where a command may stand, after a task, is almost
/// always an unquoted task (`oneshot fix the bug`): say so, but never for a line that starts
/// with a command. Anything else is clap's own message.
pub fn explain(e: clap::Error) -> ! {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() == clap::error::ErrorKind::InvalidSubcommand {
        let words = positional_words(std::env::args().skip(1));
        if let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidSubcommand)
            && let Some(why) = super::typo::unknown_verb(&words, bad)
        {
            super::out::stderr(format_args!("oneshot: error: failed to {why}\n"));
            std::process::exit(super::exit::USAGE);
        }
        if words.len() >= 2 && !super::typo::is_command(&words[0]) {
            let task = words.join(" ");
            super::out::stderr(format_args!(
                "oneshot: error: failed to start a session: the task is several words; quote \
                 it, e.g. oneshot [OPTIONS] {}\n",
                shell_words::quote(&task)
            ));
            std::process::exit(super::exit::USAGE);
        }
    }
    e.exit()
}

/// The words of a command line that are neither options nor their values.
fn positional_words(args: impl Iterator<Item = String>) -> Vec<String> {
    /// Options that take a value as the next word.
    const VALUED: [&str; 15] = [
        "--policy",
        "--worker-cmd",
        "--auditor-cmd",
        "--workdir",
        "--hook-budget",
        "--policy-path",
        "--policy-reload",
        "--resume",
        "--state-dir",
        "--max-iterations",
        "--timeout",
        "--inactivity-timeout",
        "--color",
        "--task-file",
        "--store",
    ];
    let mut words = Vec::new();
    let mut skip = false;
    for a in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        if a.starts_with('-') {
            skip = VALUED.contains(&a.as_str());
            continue;
        }
        words.push(a);
    }
    words
}

/// The examples and the exit-code table (from `super::exit`, so it cannot drift).
fn after_help() -> String {
    format!("{EXAMPLES}\n\n{}", super::exit::help())
}

/// oneshot — run AI coding agents in a supervised worker → auditor → retry loop.
#[derive(Debug, Parser)]
#[command(
    name = "oneshot",
    version = env!("ONESHOT_VERSION"),
    after_long_help = after_help(),
    after_help = "Run `oneshot --help` for examples and exit codes."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Where sessions are stored [default: one directory per project under
    /// $XDG_STATE_HOME/oneshot/projects (~/.local/state/…), outside the agents' reach].
    #[arg(
        long,
        global = true,
        env = "ONESHOT_STATE_DIR",
        value_name = "DIR",
        help_heading = GLOBAL
    )]
    pub state_dir: Option<PathBuf>,
    /// Show only the outcome, not the agents' output or transitions.
    #[arg(long, short, global = true, help_heading = GLOBAL)]
    pub quiet: bool,
    /// More of oneshot's own diagnostics on stderr: -v what it does, -vv detail, -vvv every
    /// library's too; RUST_LOG overrides.
    #[arg(long, short, global = true, action = clap::ArgAction::Count, help_heading = GLOBAL)]
    pub verbose: u8,
    /// When to colour state names and errors [default: auto: on a terminal, unless NO_COLOR
    /// is set; CLICOLOR_FORCE=1 forces it].
    #[arg(
        long,
        global = true,
        value_name = "WHEN",
        value_enum,
        help_heading = GLOBAL
    )]
    pub color: Option<super::color::ColorChoice>,
}

/// The help heading of the options every command takes.
const GLOBAL: &str = "Global options";

/// Subcommands. Without one, `oneshot [OPTIONS] PROMPT` runs a session.
// Parsed once per process: the size of the largest variant costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a new session (the same as `oneshot [OPTIONS] PROMPT`).
    #[command(after_help = examples::RUN)]
    Run(RunArgs),
    /// Continue an interrupted or crashed session (the latest one without ID).
    #[command(after_help = examples::RESUME)]
    Resume(ResumeArgs),
    /// Show a session's state (the latest one without ID).
    #[command(after_help = examples::STATUS)]
    Status {
        /// Session id or unique prefix.
        #[arg(add = ArgValueCandidates::new(super::complete::sessions))]
        id: Option<String>,
        /// Print the state file and whether a oneshot drives it, as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// List sessions, newest first.
    #[command(after_help = examples::LIST)]
    List {
        /// Print JSON, one object per session.
        #[arg(long)]
        json: bool,
        /// Show at most N sessions (the newest).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Only sessions in state S: a state name (any case) or running, stale, paused,
        /// resumable (stale or paused), terminal (or done); repeatable or comma-separated.
        #[arg(long, value_name = "S", value_delimiter = ',', value_parser = super::list::parse_state)]
        state: Vec<super::list::StateFilter>,
    },
    /// Check, test, replay and trust policies; write editor stubs.
    #[command(subcommand, after_help = examples::POLICY)]
    Policy(PolicyCommand),
    /// List, show and self-check the JSON Schemas structured answers are validated against.
    Schema(super::schema::SchemaArgs),
    /// Ask an agent (or a command) one question; print its answer as JSON that fits a schema.
    Ask(super::ask::AskArgs),
    /// Run a manifest of cases k times each against a target; pass only if all k answers match.
    Eval(super::eval::EvalArgs),
    /// A fault-injecting agent for tests: nonsense JSON, a crash, a hang, a flood, garbage.
    #[command(after_help = examples::SABOTEUR)]
    Saboteur(super::saboteur::SaboteurArgs),
    /// Run coding jobs through their lifecycle: create, step, approve or reject, audit.
    Job(super::job::JobArgs),
    /// Look after the job store itself: `migrate` a PostgreSQL store to this oneshot's schema.
    Store(super::store::StoreArgs),
    /// The dashboard's tokens: create (printed once), list, revoke, and one-time sign-in links.
    Token(super::token::TokenArgs),
    /// The dashboard: the board, jobs, the approval inbox, and the verbs, over HTTP on
    /// 127.0.0.1 (scoped tokens; a one-time sign-in link is printed at start).
    Serve(super::serve::ServeArgs),
    /// Show what each iteration of a session did: the worker's prompt and account, what it
    /// changed, the auditor's verdict, and what the agents spent (the latest without ID).
    #[command(after_help = examples::SHOW)]
    Show {
        /// Session id or unique prefix [default: the latest session].
        #[arg(add = ArgValueCandidates::new(super::complete::sessions))]
        id: Option<String>,
        /// Only this iteration (from 1).
        #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        iteration: Option<u32>,
        /// Prompts and runs whole, not their first and last lines.
        #[arg(long)]
        full: bool,
        /// Print the iterations as one JSON object (docs/json.md).
        #[arg(long, conflicts_with = "full")]
        json: bool,
    },
    /// Show a session's activity log (the latest session's without ID).
    #[command(after_help = examples::LOG)]
    Log {
        /// Session id or unique prefix [default: the latest session].
        #[arg(add = ArgValueCandidates::new(super::complete::sessions))]
        id: Option<String>,
        /// Keep printing new records until the session stops.
        #[arg(long, short)]
        follow: bool,
        /// Print the raw NDJSON records.
        #[arg(long)]
        json: bool,
        /// Show an agent's protocol lines (its JSON) instead of its account of what it did.
        #[arg(long, conflicts_with = "json")]
        raw: bool,
    },
    /// Tell a session's or a job's worker something while it works: delivered into the running
    /// agent's conversation where its protocol allows (Claude, Codex app-server, Gemini ACP),
    /// else carried by the next worker prompt. A job's message goes into its audit trail, and
    /// the runner holding the job — on any machine — hands it to its session.
    #[command(after_help = examples::SAY)]
    Say {
        /// Session id or unique prefix; else a job id (`job-1a2b3c4d`) or unique prefix, in
        /// the job store (--store).
        #[arg(add = ArgValueCandidates::new(super::complete::sessions_and_jobs))]
        id: String,
        /// The message (`-`: read it from stdin).
        #[arg(value_name = "MESSAGE", conflicts_with = "file")]
        text: Option<String>,
        /// Read the message from a file (`-`: stdin).
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Preempt the worker's running turn (Claude `priority: now`, a Codex steer, a Gemini
        /// cancel and re-prompt); by default the message waits for the agent's next step.
        #[arg(long)]
        now: bool,
        /// How long to wait to hear how the message was handed on.
        #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
        wait: std::time::Duration,
        /// The job store, for a job's id.
        #[command(flatten)]
        store: super::store::StoreFlag,
    },
    /// Pause a session running elsewhere (as Ctrl-C there would; again: kill its agent now);
    /// `resume` continues it.
    #[command(after_help = examples::STOP)]
    Stop {
        /// Session id or unique prefix.
        #[arg(add = ArgValueCandidates::new(super::complete::sessions))]
        id: String,
        /// How long to wait for the session to pause.
        #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
        wait: std::time::Duration,
        /// Ask it to pause and return at once.
        #[arg(long, conflicts_with = "wait")]
        no_wait: bool,
    },
    /// Remove finished sessions (COMPLETED, FAILED, REJECTED) last updated longer ago than D;
    /// never one that runs or can be resumed.
    #[command(after_help = examples::PRUNE)]
    Prune {
        /// The age, e.g. 7d, 12h, 30m.
        #[arg(long, value_name = "D", required = true, value_parser = parse_duration)]
        older_than: std::time::Duration,
        /// List what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Show the effective settings and where each came from (flag, config file, environment,
    /// default).
    #[command(after_help = examples::CONFIG)]
    Config {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Write a starter oneshot.toml, a policy (oneshot.lua) with its tests, and editor stubs.
    #[command(after_help = examples::INIT)]
    Init {
        /// Where to write them [default: the current directory].
        #[arg(long, default_value = ".", value_name = "DIR")]
        dir: PathBuf,
        /// Overwrite files that already exist.
        #[arg(long)]
        force: bool,
    },
    /// Print a shell completion script to stdout: commands, options, and session and job ids.
    #[command(after_help = examples::COMPLETIONS)]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to stdout.
    #[command(after_help = examples::MAN)]
    Man,
}

/// Options of a new session.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The policy file (Lua) that makes the judgement calls; the built-in policy otherwise.
    #[arg(long, env = "ONESHOT_POLICY", value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The worker: an agent CLI driven over its own protocol — claude (stream-json with its
    /// control protocol), codex (app-server, JSON-RPC), gemini (the Agent Client Protocol),
    /// aider (--message-file), cline (--json, with the provider configured by `cline auth`) —
    /// optionally with a model (`claude:opus`, `codex:gpt-5.5`); or `cmd` for the --worker-cmd
    /// command line. The binary comes from PATH or $ONESHOT_<AGENT>_BIN; oneshot's environment
    /// reaches it (that is how it is pointed at a proxy or a local model). As worker the agent
    /// may edit files and run commands in the workdir: Claude, Codex and Gemini ask before each
    /// tool (Codex before each command that is not known to be safe, inside --sandbox
    /// workspace-write) and the policy's `permit` hook answers — by default everything is
    /// allowed; Aider makes its edits, no auto-commits; Cline runs with --auto-approve true.
    #[arg(long, env = "ONESHOT_WORKER", value_name = "AGENT[:MODEL]")]
    pub worker: Option<String>,
    /// The auditor: an agent (as for --worker) or `cmd`. As auditor an agent judges without
    /// editing: Claude's and Gemini's file-editing tools are denied by the default `permit`,
    /// Codex runs `exec --sandbox read-only` with the verdict schema, Aider --chat-mode ask,
    /// Cline --plan (no editing tool; shell commands that write are refused by Cline's own
    /// check).
    #[arg(long, env = "ONESHOT_AUDITOR", value_name = "AGENT[:MODEL]")]
    pub auditor: Option<String>,
    /// An argument added to the worker agent's command line after oneshot's own (repeat for
    /// more), e.g. --worker-arg=--max-turns --worker-arg=20.
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub worker_arg: Vec<String>,
    /// An argument added to the auditor agent's command line (repeatable).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub auditor_arg: Vec<String>,
    /// The worker's command line: split like a shell would, run without one (write
    /// `sh -c '…'` for shell syntax). `{prompt}` in it is replaced by the prompt.
    #[arg(long, env = "ONESHOT_WORKER_CMD", value_name = "CMDLINE")]
    pub worker_cmd: Option<String>,
    /// The auditor's command line (same rules as --worker-cmd).
    #[arg(long, env = "ONESHOT_AUDITOR_CMD", value_name = "CMDLINE")]
    pub auditor_cmd: Option<String>,
    /// The directory the agents run in [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    #[command(flatten)]
    pub policy_opts: PolicyArgs,
    /// Continue session ID instead of starting one (the same as `oneshot resume ID`).
    #[arg(long, value_name = "ID", add = ArgValueCandidates::new(super::complete::sessions), conflicts_with_all = ["worker", "auditor", "worker_cmd", "auditor_cmd", "prompt", "task_file"])]
    pub resume: Option<String>,
    /// Print the session's transitions and outcome on stdout as NDJSON, one object per line,
    /// and nothing else (see docs/run-json.md). New sessions only.
    #[arg(long, conflicts_with = "resume")]
    pub json: bool,
    /// Show an agent's protocol lines (its JSON) instead of its account of what it did — what
    /// it said, each tool with its input and outcome; the log keeps both.
    #[arg(long, conflicts_with = "json")]
    pub raw: bool,
    /// The task for the worker; `-` reads it from stdin.
    pub prompt: Option<String>,
    /// Read the task from FILE (UTF-8 text, any size) instead of the command line.
    #[arg(long, value_name = "FILE")]
    pub task_file: Option<PathBuf>,
}

/// Options of `resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// Session id or unique prefix [default: the latest session].
    #[arg(add = ArgValueCandidates::new(super::complete::sessions))]
    pub id: Option<String>,
    /// Use this policy from now on instead of the recorded one.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Show an agent's protocol lines (its JSON) instead of its account of what it did.
    #[arg(long)]
    pub raw: bool,
    #[command(flatten)]
    pub policy_opts: PolicyArgs,
}

/// How policies are run, for `run` and `resume` alike. A `resume` without them keeps what the
/// session was started (or last resumed) with.
#[derive(Debug, Args, Clone)]
pub struct PolicyArgs {
    /// Wall-clock budget of each policy hook call [default: 100ms; resume: the session's].
    #[arg(long, value_name = "DURATION", env = "ONESHOT_HOOK_BUDGET", value_parser = parse_duration)]
    pub hook_budget: Option<std::time::Duration>,
    /// Extra directories `require` may load policy modules from (after the policy's own
    /// directory); repeatable, or `:`-separated in ONESHOT_POLICY_PATH [resume: the
    /// session's].
    #[arg(
        long,
        value_name = "DIR",
        env = "ONESHOT_POLICY_PATH",
        value_delimiter = ':'
    )]
    pub policy_path: Vec<PathBuf>,
    /// When an edited policy is loaded into the running session: `auto` reloads files outside
    /// the workdir and asks for `oneshot policy trust` for files an agent could have written;
    /// `trusted` asks for trust for every change; `off` never reloads [default: auto; resume:
    /// the session's].
    #[arg(long, value_name = "MODE", env = "ONESHOT_POLICY_RELOAD")]
    pub policy_reload: Option<oneshot::policy::ReloadMode>,
    /// `off` runs the agents unconfined; by default each agent (and all it starts) runs in
    /// user, mount and network namespaces of its own: it sees the system and its home
    /// directory as the user does, never oneshot's key, trust store or state directories,
    /// with Landlock inside as a second wall (Landlock alone where namespaces are refused)
    /// [default: on; resume: the session's].
    #[arg(long, value_name = "on|off", env = "ONESHOT_SANDBOX", value_parser = parse_switch)]
    pub sandbox: Option<bool>,
    /// What the agents' network is: `policy` — only through oneshot's egress proxy, to the
    /// hosts the policy's `network` table and `egress` hook allow and the agent's own model
    /// API (its key added by the proxy, never in the agent's environment); `none` — the model
    /// API alone; `open` — the network as oneshot has it [default: policy; resume: the
    /// session's].
    #[arg(long, value_name = "policy|none|open", env = "ONESHOT_NETWORK")]
    pub network: Option<oneshot::process::NetworkMode>,
    /// A check: a shell command run in the workdir after each worker run and before the
    /// auditor (`cargo test`); repeatable. Any failing check is a RETRY with the check's
    /// output as the critique, and no auditor runs; when all pass, the auditor is told. Runs
    /// after the policy's `checks` [resume: the session's].
    #[arg(long, value_name = "CMD", env = "ONESHOT_CHECK")]
    pub check: Vec<String>,
    /// How many worker iterations the session may use, whatever the policy's
    /// `limits.max_iterations` says [resume: the session's].
    #[arg(long, value_name = "N", env = "ONESHOT_MAX_ITERATIONS", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: Option<u32>,
    /// The worker's wall-clock timeout, whatever the policy's `limits.worker_timeout` says
    /// [resume: the session's].
    #[arg(long, value_name = "DURATION", env = "ONESHOT_TIMEOUT", value_parser = parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Silence from a running agent for this long stops it, whatever the policy's
    /// `limits.inactivity_timeout` says [resume: the session's].
    #[arg(long, value_name = "DURATION", env = "ONESHOT_INACTIVITY_TIMEOUT", value_parser = parse_duration)]
    pub inactivity_timeout: Option<std::time::Duration>,
    /// Where each value came from (filled in by `super::config::apply`).
    #[arg(skip)]
    pub origins: super::config::Origins,
}

fn parse_switch(s: &str) -> Result<bool, String> {
    oneshot::config::switch(s).ok_or_else(|| format!("`{s}`: say on or off"))
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (examples: 100ms, 2s, 5m)"))
}

/// `oneshot policy …`
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Load and validate a policy; list its hooks, effective limits and modules.
    #[command(after_help = examples::POLICY_CHECK)]
    Check {
        /// The policy file.
        file: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a policy's tests (FILE_test.lua beside it, and its `tests` table).
    #[command(after_help = examples::POLICY_TEST)]
    Test {
        /// The policy file.
        file: PathBuf,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-run a recorded session's decisions through another policy: what differs, and where
    /// the session would have ended under it.
    #[command(after_help = examples::POLICY_REPLAY)]
    Replay {
        /// Session id or unique prefix (may still be running).
        #[arg(add = ArgValueCandidates::new(super::complete::sessions))]
        id: String,
        /// The policy to replay with.
        #[arg(long, value_name = "FILE")]
        policy: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Exit 1 unless the verdict is "no difference": a decision's answer or reason
        /// differs or fails, or the path or the end changes (for CI).
        #[arg(long)]
        exit_code: bool,
        /// Stop where the replayed path leaves the recorded one, instead of going on with the
        /// recorded runs standing in for the runs the new path needs (printed as assumptions).
        #[arg(long)]
        stop_at_divergence: bool,
    },
    /// Trust the current content of a policy file (or module) so a running session may load
    /// it, even though it lives where an agent can write.
    #[command(after_help = examples::POLICY_TRUST)]
    Trust {
        /// The files to trust.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Write editor type definitions for the policy API (LuaLS and luau-lsp).
    #[command(after_help = examples::POLICY_STUBS)]
    Stubs {
        /// Where to write oneshot.d.lua and oneshot.d.luau.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
}
