//! Where each setting comes from: the command line, the project's `oneshot.toml`, the user's
//! `config.toml`, the environment or the built-in default — in that order — and `oneshot
//! config`, which shows the outcome.
//!
//! Clap folds the environment variables into the same fields as the flags; its
//! `ArgMatches::value_source` tells them apart, so a file value can sit between the two.

use super::args::{Cli, Command, PolicyArgs, RunArgs};
use anyhow::{Context, Result};
use clap::ArgMatches;
use clap::parser::ValueSource;
use oneshot::config::{ConfigFile, KEYS, Key, Value};
use oneshot::session::{LimitOverrides, Override};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag.
    Flag,
    /// A config file, at this line.
    File(PathBuf, usize),
    /// An environment variable.
    Env(&'static str),
    /// Nothing set it.
    Default,
}

impl Origin {
    /// How the history and `oneshot config` name it: `--max-iterations`, `/p/oneshot.toml:3`,
    /// `env ONESHOT_TIMEOUT`, `default`.
    fn describe(&self, key: Key) -> String {
        match self {
            Origin::Flag => format!("--{key}"),
            Origin::File(path, line) => format!("{}:{line}", path.display()),
            Origin::Env(var) => format!("env {var}"),
            Origin::Default => "default".into(),
        }
    }

    fn word(&self) -> &'static str {
        match self {
            Origin::Flag => "flag",
            Origin::File(..) => "file",
            Origin::Env(_) => "env",
            Origin::Default => "default",
        }
    }
}

/// Where each setting of a run came from (only the keys somebody set).
#[derive(Debug, Clone, Default)]
pub struct Origins(BTreeMap<Key, Origin>);

impl Origins {
    fn of(&self, key: Key) -> Origin {
        self.0.get(&key).cloned().unwrap_or(Origin::Default)
    }
}

/// The config files in force for a command run in one place.
#[derive(Debug, Default)]
pub struct Files {
    /// The project's `oneshot.toml`, if there is one.
    pub project: Option<ConfigFile>,
    /// The user's `config.toml`, if it exists.
    pub user: Option<ConfigFile>,
}

impl Files {
    /// Finds and loads the files for a command whose workdir is `start`.
    pub fn load(start: &Path) -> Result<Files> {
        let project = oneshot::config::find_project_file(start)
            .map(|p| ConfigFile::load(&p))
            .transpose()?;
        let user = oneshot::config::user_file(|k| std::env::var_os(k))
            .filter(|p| p.is_file())
            .map(|p| ConfigFile::load(&p))
            .transpose()?;
        Ok(Files { project, user })
    }

    /// The `[notify]` table in force: the project file's, else the user file's (a table is
    /// taken whole, not merged).
    pub(crate) fn notify(&self) -> Option<&oneshot::config::NotifyDef> {
        [&self.project, &self.user]
            .into_iter()
            .flatten()
            .find_map(|f| f.notify.as_ref())
    }

    /// The value of `key` and where it is: the project file's, else the user file's.
    pub(crate) fn get(&self, key: Key) -> Option<(&Value, Origin)> {
        [&self.project, &self.user]
            .into_iter()
            .flatten()
            .find_map(|f| {
                f.get(key)
                    .map(|e| (&e.value, Origin::File(f.path.clone(), e.line)))
            })
    }
}

/// The clap id of the field `key` fills.
fn arg_id(key: Key) -> &'static str {
    match key {
        Key::Worker => "worker",
        Key::Auditor => "auditor",
        Key::WorkerCmd => "worker_cmd",
        Key::AuditorCmd => "auditor_cmd",
        Key::Policy => "policy",
        Key::MaxIterations => "max_iterations",
        Key::Timeout => "timeout",
        Key::InactivityTimeout => "inactivity_timeout",
        Key::StateDir => "state_dir",
        Key::HookBudget => "hook_budget",
        Key::PolicyPath => "policy_path",
        Key::PolicyReload => "policy_reload",
        Key::Sandbox => "sandbox",
        Key::Network => "network",
        Key::Check => "check",
        // `job create --namer`: no option of `run`, so clap never says it set it.
        Key::Namer => "namer",
        // `job … --store` and `store … --store`: no option of `run` either.
        Key::Store => "store",
    }
}

/// Who set `key` on the command line or in the environment, per clap. A command without that
/// option (`resume` has no `--worker-cmd`) set nothing; asking clap directly would panic.
fn clap_origin(matches: &ArgMatches, key: Key) -> Origin {
    let id = arg_id(key);
    match matches
        .try_get_raw(id)
        .ok()
        .flatten()
        .and_then(|_| matches.value_source(id))
    {
        Some(ValueSource::CommandLine) => Origin::Flag,
        Some(ValueSource::EnvVariable) => Origin::Env(key.env()),
        _ => Origin::Default,
    }
}

/// The matches that hold the run options: the subcommand's for `run` and `resume`.
fn run_matches<'m>(cli: &Cli, matches: &'m ArgMatches) -> &'m ArgMatches {
    match &cli.command {
        Some(Command::Run(_)) => matches.subcommand_matches("run").unwrap_or(matches),
        Some(Command::Resume(_)) => matches.subcommand_matches("resume").unwrap_or(matches),
        _ => matches,
    }
}

/// What the command runs with, after the files had their say.
#[derive(Debug)]
pub struct Effective {
    /// Where sessions are stored.
    pub state_dir: PathBuf,
    /// Who chose it.
    pub state_dir_origin: Origin,
    /// The files that were read.
    pub files: Files,
    /// The project root the command belongs to.
    pub project_root: PathBuf,
}

/// Merges the config files into `cli` (for a new session; a resume keeps what the session
/// recorded, so only its flags and environment count) and settles the state directory.
pub fn apply(cli: &mut Cli, matches: &ArgMatches) -> Result<Effective> {
    let cwd = std::env::current_dir().context("read the current directory")?;
    let run = run_matches(cli, matches);
    let resuming = matches!(cli.command, Some(Command::Resume(_)))
        || matches!(&cli.command, Some(Command::Run(a)) if a.resume.is_some())
        || (cli.command.is_none() && cli.run.resume.is_some());
    // `init` writes a config; a broken one must not stop it.
    let reads_files = !matches!(cli.command, Some(Command::Init { .. }));
    let args: Option<&mut RunArgs> = match &mut cli.command {
        Some(Command::Run(a)) => Some(a),
        None | Some(Command::Config { .. }) => Some(&mut cli.run),
        _ => None,
    };
    let start = args
        .as_ref()
        .and_then(|a| a.workdir.as_ref())
        .map(|d| cwd.join(d))
        .unwrap_or_else(|| cwd.clone());
    let files = if reads_files {
        Files::load(&start)?
    } else {
        Files::default()
    };
    match (args, resuming) {
        (Some(args), false) => merge(args, run, &files),
        (Some(args), true) => args.policy_opts.origins = clap_origins(run),
        (None, _) => {
            if let Some(Command::Resume(r)) = &mut cli.command {
                r.policy_opts.origins = clap_origins(run);
            }
        }
    }
    let (state_dir, state_dir_origin) =
        match (clap_origin(matches, Key::StateDir), &cli.global.state_dir) {
            (Origin::Flag, Some(dir)) => (dir.clone(), Origin::Flag),
            (clap, given) => match files.get(Key::StateDir) {
                Some((Value::Path(p), origin)) => (p.clone(), origin),
                _ => match given {
                    Some(dir) => (dir.clone(), clap),
                    None => (default_state_dir(&start), Origin::Default),
                },
            },
        };
    Ok(Effective {
        state_dir,
        state_dir_origin,
        files,
        project_root: oneshot::config::project_root(&start),
    })
}

/// The origins clap alone knows (a resume reads no files).
fn clap_origins(matches: &ArgMatches) -> Origins {
    Origins(
        KEYS.into_iter()
            .map(|k| (k, clap_origin(matches, k)))
            .filter(|(_, o)| *o != Origin::Default)
            .collect(),
    )
}

/// Fills every field the command line left to the files (or the environment).
fn merge(args: &mut RunArgs, matches: &ArgMatches, files: &Files) {
    let mut origins = clap_origins(matches);
    for key in KEYS {
        if key == Key::StateDir || origins.of(key) == Origin::Flag {
            continue;
        }
        let Some((value, origin)) = files.get(key) else {
            continue;
        };
        let p = &mut args.policy_opts;
        match (key, value.clone()) {
            (Key::Worker, Value::Text(t)) => args.worker = Some(t),
            (Key::Auditor, Value::Text(t)) => args.auditor = Some(t),
            (Key::WorkerCmd, Value::Text(t)) => args.worker_cmd = Some(t),
            (Key::AuditorCmd, Value::Text(t)) => args.auditor_cmd = Some(t),
            (Key::Policy, Value::Path(f)) => args.policy = Some(f),
            (Key::MaxIterations, Value::Count(n)) => p.max_iterations = Some(n),
            (Key::Timeout, Value::Duration(d)) => p.timeout = Some(d),
            (Key::InactivityTimeout, Value::Duration(d)) => p.inactivity_timeout = Some(d),
            (Key::HookBudget, Value::Duration(d)) => p.hook_budget = Some(d),
            (Key::PolicyPath, Value::Paths(dirs)) => p.policy_path = dirs,
            (Key::PolicyReload, Value::Reload(m)) => p.policy_reload = Some(m),
            (Key::Sandbox, Value::Switch(on)) => p.sandbox = Some(on),
            (Key::Network, Value::Network(n)) => p.network = Some(n),
            (Key::Check, Value::Texts(t)) => p.check = t,
            _ => continue,
        }
        origins.0.insert(key, origin);
    }
    args.policy_opts.origins = origins;
}

/// The default state directory for a command whose workdir is `start` (see
/// `oneshot::store::default_state_dir`), else `.oneshot` there.
fn default_state_dir(start: &Path) -> PathBuf {
    oneshot::store::default_state_dir(start, |k| std::env::var_os(k)).unwrap_or_else(|| {
        super::out::stderr(format_args!(
            "oneshot: warning: no home directory; keeping sessions in .oneshot here, where an \
             agent working here could change them\n"
        ));
        ".oneshot".into()
    })
}

impl PolicyArgs {
    /// The limits these options override, on top of `recorded` (a resume's): each with where
    /// it was given, for the history.
    pub fn limit_overrides(&self, recorded: &LimitOverrides) -> LimitOverrides {
        let from = |key| self.origins.of(key).describe(key);
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        let mut limits = recorded.clone();
        if let Some(n) = self.max_iterations {
            limits.max_iterations = Some(Override::new(n, from(Key::MaxIterations)));
        }
        if let Some(d) = self.timeout {
            limits.worker_timeout_ms = Some(Override::new(ms(d), from(Key::Timeout)));
        }
        if let Some(d) = self.inactivity_timeout {
            limits.inactivity_timeout_ms = Some(Override::new(ms(d), from(Key::InactivityTimeout)));
        }
        limits
    }
}

/// `oneshot config`: every key's effective value and where it came from.
pub fn show(cli: &Cli, effective: &Effective, json: bool) -> Result<i32> {
    let args = &cli.run;
    let origins = &args.policy_opts.origins;
    let p = &args.policy_opts;
    let dur = |d: Option<std::time::Duration>| d.map(|d| humantime::format_duration(d).to_string());
    // Read by `job create` only, from the files or the environment (no `run` flag holds it).
    let namer = match effective.files.get(Key::Namer) {
        Some((Value::Text(t), o)) => Some((t.clone(), o)),
        _ => std::env::var(Key::Namer.env())
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (v, Origin::Env(Key::Namer.env()))),
    };
    // What `oneshot job …` run here would open: shown with its password masked.
    let (store, store_origin) =
        super::store::location(None, &effective.files, &effective.state_dir)?;
    let rows: Vec<(Key, Option<String>, Origin)> = KEYS
        .into_iter()
        .map(|key| {
            let value = match key {
                Key::Worker => args.worker.clone(),
                Key::Auditor => args.auditor.clone(),
                Key::WorkerCmd => args.worker_cmd.clone(),
                Key::AuditorCmd => args.auditor_cmd.clone(),
                Key::Policy => args.policy.as_ref().map(|f| f.display().to_string()),
                Key::MaxIterations => p.max_iterations.map(|n| n.to_string()),
                Key::Timeout => dur(p.timeout),
                Key::InactivityTimeout => dur(p.inactivity_timeout),
                Key::StateDir => Some(effective.state_dir.display().to_string()),
                Key::HookBudget => dur(p.hook_budget),
                Key::PolicyPath => (!p.policy_path.is_empty()).then(|| {
                    let dirs: Vec<String> = p
                        .policy_path
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect();
                    dirs.join(":")
                }),
                Key::PolicyReload => p.policy_reload.map(|m| m.to_string()),
                Key::Sandbox => p
                    .sandbox
                    .map(|on| if on { "on" } else { "off" }.to_string()),
                Key::Network => p.network.map(|n| n.to_string()),
                Key::Check => (!p.check.is_empty()).then(|| p.check.join("; ")),
                Key::Namer => namer.as_ref().map(|(v, _)| v.clone()),
                Key::Store => Some(store.to_string()),
            };
            let origin = match key {
                Key::StateDir => effective.state_dir_origin.clone(),
                Key::Namer => namer.as_ref().map_or(Origin::Default, |(_, o)| o.clone()),
                Key::Store => store_origin.clone(),
                _ => origins.of(key),
            };
            (key, value, origin)
        })
        .collect();
    let file = |f: &Option<ConfigFile>| f.as_ref().map(|f| f.path.display().to_string());
    if json {
        let values: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(key, value, origin)| {
                let from = match origin {
                    Origin::Default => serde_json::Value::Null,
                    o => o.describe(*key).into(),
                };
                let entry = serde_json::json!({
                    "value": value,
                    "source": origin.word(),
                    "from": from,
                    "default": value.is_none().then(|| unset(*key)),
                });
                (key.name().to_string(), entry)
            })
            .collect();
        let doc = serde_json::json!({
            "project_root": effective.project_root,
            "project_file": file(&effective.files.project),
            "user_file": file(&effective.files.user),
            "values": values,
        });
        outln!("{doc}");
        return Ok(0);
    }
    let width = KEYS.iter().map(|k| k.name().len()).max().unwrap_or(0);
    outln!("project root: {}", effective.project_root.display());
    let none = "(none)".to_string();
    outln!(
        "project file: {}",
        file(&effective.files.project).unwrap_or_else(|| none.clone())
    );
    outln!(
        "user file:    {}",
        file(&effective.files.user).unwrap_or(none)
    );
    for (key, value, origin) in rows {
        let shown = value.unwrap_or_else(|| format!("({})", unset(key)));
        outln!("{:width$}  {shown}  [{}]", key.name(), origin.describe(key));
    }
    Ok(0)
}

/// What an unset key means.
fn unset(key: Key) -> &'static str {
    match key {
        Key::Worker | Key::Auditor => "cmd: the command line",
        Key::WorkerCmd | Key::AuditorCmd => "not set; a session needs it or an agent",
        Key::Policy => "the built-in policy",
        Key::MaxIterations | Key::Timeout | Key::InactivityTimeout => "the policy's limit",
        Key::StateDir => "the per-project default",
        Key::HookBudget => "100ms",
        Key::PolicyPath => "only the policy's own directory",
        Key::PolicyReload => "auto",
        Key::Sandbox => "on (resume: the session's)",
        Key::Network => "policy: the policy's allowlist (resume: the session's)",
        Key::Check => "none but the policy's `checks` (resume: the session's)",
        Key::Namer => "none: job branches are named from the task",
        Key::Store => "<state dir>/jobs.db",
    }
}
