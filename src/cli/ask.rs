//! `oneshot ask`: one prompt in, one JSON object out that fits a schema (`oneshot::ask`). This
//! maps arguments to the library and prints.

use super::config::Files;
use super::exit;
use anyhow::{Context, Result, bail};
use clap::Args;
use oneshot::agent::AgentSpec;
use oneshot::ask::{Ask, AskError, Permits, Target};
use oneshot::config::Runs;
use oneshot::policy::{PolicyOptions, PolicyService};
use oneshot::schema::Registry;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

/// Whether `name` is a `[targets.NAME]` of the config files.
pub fn is_named(name: &str, files: &Files) -> bool {
    [&files.project, &files.user]
        .into_iter()
        .flatten()
        .any(|f| f.targets.iter().any(|t| t.name == name))
}

/// `--target` (of `ask` and `eval`): a `[targets.NAME]` of the project's `oneshot.toml` (then
/// the user's config), else an agent. A named target's `$VAR` environment values are read now,
/// so a missing secret is said before anything runs.
pub fn resolve(
    name: &str,
    extra: &[String],
    files: &Files,
) -> Result<(Target, Vec<(String, String)>)> {
    let usage = |m: String| oneshot::engine::EngineError::Usage(m);
    let named = [&files.project, &files.user]
        .into_iter()
        .flatten()
        .find_map(|f| f.targets.iter().find(|t| t.name == name).map(|t| (f, t)));
    let Some((file, def)) = named else {
        let mut spec = AgentSpec::parse(name).map_err(|e| {
            usage(format!(
                "ask: --target {name}: {e}; or name a [targets.NAME] of oneshot.toml"
            ))
        })?;
        spec.args = extra.to_vec();
        return Ok((Target::Agent(spec), Vec::new()));
    };
    let env = def.resolved_env(|k| std::env::var(k).ok()).map_err(|var| {
        usage(format!(
            "use target {name} ({}:{}): it reads ${var}, which is not set; export it (secrets stay out of the file)",
            file.path.display(),
            def.line
        ))
    })?;
    let target = match &def.runs {
        Runs::Agent(agent) => {
            let mut spec =
                AgentSpec::parse(agent).map_err(|e| usage(format!("use target {name}: {e}")))?;
            spec.args = def.args.iter().chain(extra).cloned().collect();
            Target::Agent(spec)
        }
        Runs::Cmd(cmd) => Target::Command(cmd.clone()),
    };
    Ok((target, env))
}

const EXAMPLES: &str = "\
Examples:
  oneshot ask --target claude --schema verdict \"Is src/parser.rs correct? Say why.\"
  oneshot ask --target codex:gpt-5.5 --schema ./triage.json - < issue.txt
  oneshot ask --target gemini --schema nudgenik --timeout 2m \"$(tmux capture-pane -p)\"
  oneshot ask --target-cmd \"sh classify.sh\" --schema branch-suggest \"add a --json flag\"
  oneshot ask --target fast --schema verdict \"...\"   # [targets.fast] in oneshot.toml (docs/config.md)
  oneshot ask --target claude --policy ask.lua --schema verdict \"...\"   # its permit hook judges tools

The answer is printed as one JSON object on stdout, and the exit code is 0 only when it fits
the schema: oneshot checks it itself, whatever the target (Claude gets the schema inline,
Codex as --output-schema — which Codex does not enforce —, the others in the prompt, their
JSON found in their text). An answer that does not fit is asked again with what was wrong,
up to --attempts runs; then exit 1 with the violations. Exit 2: a bad schema or target,
nothing ran. The agent runs read-only (as an auditor: no file edits), or as --policy FILE's
`permit` hook decides; every refused tool request is said on stderr.";

/// `oneshot ask …`
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct AskArgs {
    /// Who answers, and how long and how often.
    #[command(flatten)]
    pub who: TargetArgs,
    /// The schema the answer must fit: a label (`oneshot schema list`) or a .json file.
    #[arg(long, value_name = "LABEL|FILE")]
    pub schema: String,
    /// The directory the target runs in [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A policy file (Lua) whose `permit` hook answers the agent's tool requests, as it does a
    /// session auditor's [default: the built-in rule: every tool but those that edit files].
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The question; `-` reads it from stdin.
    #[arg(value_name = "PROMPT|-")]
    pub prompt: String,
}

/// Environment added for a target.
type Env = Vec<(String, String)>;

/// Who answers a structured question, and how long and how often (`ask` and `eval`).
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// The agent that answers: claude, codex, gemini, aider or cline, optionally with a model
    /// (`claude:opus`); or the name of a [targets.NAME] table in oneshot.toml.
    #[arg(long, value_name = "AGENT[:MODEL]|NAME", conflicts_with = "target_cmd")]
    pub target: Option<String>,
    /// A command line that answers instead: the prompt on its stdin, the answer on its stdout.
    #[arg(long, value_name = "CMDLINE")]
    pub target_cmd: Option<String>,
    /// An argument added to the target agent's command line (repeatable).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub target_arg: Vec<String>,
    /// The directory of your own schemas [default: .oneshot/schemas in the project].
    #[arg(long, env = oneshot::schema::ENV, value_name = "DIR")]
    pub registry: Option<PathBuf>,
    /// How long one run may take before it is stopped (the run then fails).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Runs per answer before giving up on one that does not fit the schema.
    #[arg(long, value_name = "N", default_value_t = oneshot::ask::DEFAULT_ATTEMPTS)]
    pub attempts: u32,
}

impl TargetArgs {
    /// The target given, with its environment (`None`: neither flag).
    pub fn target(&self, files: &Files) -> Result<Option<(Target, Env)>> {
        Ok(match (&self.target, &self.target_cmd) {
            (Some(t), _) => Some(resolve(t, &self.target_arg, files)?),
            (None, Some(cmd)) => Some((Target::Command(cmd.clone()), Vec::new())),
            (None, None) => None,
        })
    }

    /// The schema registry's directory for a command run in `cwd`.
    pub fn registry(&self, cwd: &std::path::Path) -> PathBuf {
        Registry::locate(self.registry.as_deref(), |k| std::env::var_os(k), cwd)
    }
}

/// Runs `oneshot ask`; returns the exit code. `files` hold the named targets.
pub fn run(args: AskArgs, files: &Files) -> Result<i32> {
    let cwd = std::env::current_dir()?;
    let Some((target, env)) = args.who.target(files)? else {
        bail!(oneshot::engine::EngineError::Usage(
            "ask: it needs a target (--target AGENT[:MODEL]|NAME or --target-cmd CMDLINE)".into()
        ));
    };
    let registry_dir = args.who.registry(&cwd);
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
    let mut ask = Ask {
        target,
        schema,
        prompt,
        timeout: args.who.timeout,
        dir: args.dir.clone().unwrap_or(cwd),
        attempts: args.who.attempts,
        env,
        sandbox: true,
        hidden: Vec::new(),
        permit: None,
        role: oneshot::process::Role::Auditor,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the runtime")?;
    if let Some(path) = &args.policy {
        // As `run --policy`: the file named on the command line is the user's own choice, so
        // it is loaded as it is (trust guards only changes an agent could have made since).
        let policy = rt
            .block_on(PolicyService::start(
                Some(path.clone()),
                PolicyOptions::default(),
            ))
            .map_err(|e| {
                oneshot::engine::EngineError::Usage(format!(
                    "ask: --policy {}: {}; fix it (`oneshot policy check {}` says more) or leave \
                     --policy out for the built-in rule",
                    path.display(),
                    oneshot::error::failure(&e),
                    path.display()
                ))
            })?;
        ask.permit = Some(Permits::for_ask(policy, &ask));
    }
    let result = rt.block_on(oneshot::ask::ask(&ask));
    if let Ok(answer) = &result {
        for d in &answer.denied {
            errln!(
                "oneshot: ask: refused the target's {} request: {}",
                d.tool,
                d.reason
            );
        }
    }
    match result {
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
