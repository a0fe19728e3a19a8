//! `oneshot ask`: one prompt in, one JSON object out that fits a schema (`oneshot::ask`). This
//! maps arguments to the library and prints.

use super::exit;
use anyhow::{Context, Result, bail};
use clap::Args;
use oneshot::agent::AgentSpec;
use oneshot::ask::{Ask, AskError, Target};
use oneshot::schema::Registry;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  oneshot ask --target claude --schema verdict \"Is src/parser.rs correct? Say why.\"
  oneshot ask --target codex:gpt-5.5 --schema ./triage.json - < issue.txt
  oneshot ask --target gemini --schema nudgenik --timeout 2m \"$(tmux capture-pane -p)\"
  oneshot ask --target-cmd \"sh classify.sh\" --schema branch-suggest \"add a --json flag\"

The answer is printed as one JSON object on stdout, and the exit code is 0 only when it fits
the schema: oneshot checks it itself, whatever the target (Claude gets the schema inline,
Codex as --output-schema — which Codex does not enforce —, the others in the prompt, their
JSON found in their text). An answer that does not fit is asked again with what was wrong,
up to --attempts runs; then exit 1 with the violations. Exit 2: a bad schema or target,
nothing ran. The agent runs read-only (as an auditor: no file edits).";

/// `oneshot ask …`
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct AskArgs {
    /// The agent that answers: claude, codex, gemini, aider or cline, optionally with a model
    /// (`claude:opus`).
    #[arg(long, value_name = "AGENT[:MODEL]", conflicts_with = "target_cmd")]
    pub target: Option<String>,
    /// A command line that answers instead: the prompt on its stdin, the answer on its stdout.
    #[arg(long, value_name = "CMDLINE")]
    pub target_cmd: Option<String>,
    /// An argument added to the target agent's command line (repeatable).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub target_arg: Vec<String>,
    /// The schema the answer must fit: a label (`oneshot schema list`) or a .json file.
    #[arg(long, value_name = "LABEL|FILE")]
    pub schema: String,
    /// The directory of your own schemas [default: .oneshot/schemas in the project].
    #[arg(long, env = oneshot::schema::ENV, value_name = "DIR")]
    pub registry: Option<PathBuf>,
    /// How long one run may take before it is stopped.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Runs in all before giving up on an answer that does not fit.
    #[arg(long, value_name = "N", default_value_t = oneshot::ask::DEFAULT_ATTEMPTS)]
    pub attempts: u32,
    /// The directory the target runs in [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The question; `-` reads it from stdin.
    #[arg(value_name = "PROMPT|-")]
    pub prompt: String,
}

/// Runs `oneshot ask`; returns the exit code.
pub fn run(args: AskArgs) -> Result<i32> {
    let cwd = std::env::current_dir()?;
    let target = match (&args.target, &args.target_cmd) {
        (Some(t), _) => {
            let mut spec = AgentSpec::parse(t).map_err(|e| anyhow::anyhow!("--target: {e}"))?;
            spec.args = args.target_arg.clone();
            Target::Agent(spec)
        }
        (None, Some(cmd)) => Target::Command(cmd.clone()),
        (None, None) => bail!(oneshot::engine::EngineError::Usage(
            "ask: it needs a target (--target AGENT[:MODEL] or --target-cmd CMDLINE)".into()
        )),
    };
    let registry_dir = Registry::locate(args.registry.as_deref(), |k| std::env::var_os(k), &cwd);
    let schema = Registry::open(&registry_dir)?.resolve(&args.schema)?;
    let prompt = if args.prompt == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("read the prompt from stdin")?;
        s
    } else {
        args.prompt.clone()
    };
    let ask = Ask {
        target,
        schema,
        prompt,
        timeout: args.timeout,
        dir: args.dir.clone().unwrap_or(cwd),
        attempts: args.attempts,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the runtime")?;
    match rt.block_on(oneshot::ask::ask(&ask)) {
        Ok(answer) => {
            outln!("{}", answer.value);
            if answer.attempts > 1 {
                errln!("oneshot: the answer fit on run {}", answer.attempts);
            }
            Ok(exit::OK)
        }
        Err(e) if e.is_usage() => {
            Err(oneshot::engine::EngineError::Usage(format!("ask: {e}")).into())
        }
        Err(e) => {
            errln!("oneshot: ask: {e}");
            if let AskError::NoFit { answer, .. } = &e {
                errln!("oneshot: the last answer was:\n{}", answer.trim_end());
            }
            Ok(exit::FAILED)
        }
    }
}
