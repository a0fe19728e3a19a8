//! What `job create` takes from the config files and the environment: the worker, the auditor,
//! the policy and the namer, with `oneshot run`'s precedence — a flag, then the `oneshot.toml` of the
//! job's source (the project the job works on), then the user's `config.toml`, then the
//! environment (`ONESHOT_WORKER`…). The other keys tune a session run at the terminal; a
//! job's sessions take their limits from the job's policy.

use crate::cli::config::Files;
use crate::cli::exit::usage;
use anyhow::{Context, Result};
use oneshot::config::{ConfigFile, Key, Value};
use std::path::{Path, PathBuf};

/// A value and where it was given (`--worker`, `worker in /p/oneshot.toml:3`, `ONESHOT_WORKER`).
pub(super) struct Given<T> {
    pub value: T,
    pub from: String,
}

/// One place a setting can come from, in precedence order.
enum Layer<'a> {
    Flags,
    File(&'a ConfigFile),
    Env,
}

/// The settings of a job, each with where it came from.
pub(super) struct Settings {
    /// The worker as a job spec keeps it: `AGENT[:MODEL]` or `cmd:COMMAND LINE`.
    pub worker: Given<String>,
    /// The auditor, likewise.
    pub auditor: Given<String>,
    /// The policy file, if anything names one.
    pub policy: Option<Given<PathBuf>>,
    /// The job's own checks: `--check`, else `check` of the first file that has it, else
    /// `ONESHOT_CHECK`.
    pub checks: Vec<String>,
    /// Who names the job's branch (`--namer`, `namer`, `ONESHOT_NAMER`): an agent or a
    /// `[targets.NAME]`; `None`: the branch is named from the task.
    pub namer: Option<Given<String>>,
    /// The config files read (their `[targets.NAME]` tables name namers).
    pub files: Files,
}

/// What the command line gave for each setting.
pub(super) struct Flags<'a> {
    pub worker: Option<&'a str>,
    pub worker_cmd: Option<&'a str>,
    pub auditor: Option<&'a str>,
    pub auditor_cmd: Option<&'a str>,
    pub policy: Option<&'a Path>,
    pub check: &'a [String],
    pub namer: Option<&'a str>,
}

/// Resolves the settings for a job whose source is `source`.
pub(super) fn resolve(flags: &Flags, source: &Path) -> Result<Settings> {
    let files = Files::load(source).context("create the job")?;
    let layers: Vec<Layer> = std::iter::once(Layer::Flags)
        .chain(
            [&files.project, &files.user]
                .into_iter()
                .flatten()
                .map(Layer::File),
        )
        .chain(std::iter::once(Layer::Env))
        .collect();
    let worker = player(&layers, flags, Role::Worker)
        .ok_or_else(|| missing(Role::Worker, source, &files))?;
    let auditor = player(&layers, flags, Role::Auditor)
        .ok_or_else(|| missing(Role::Auditor, source, &files))?;
    let policy = layers.iter().find_map(|layer| match layer {
        Layer::Flags => flags.policy.map(|p| Given {
            value: p.to_owned(),
            from: "--policy".into(),
        }),
        Layer::File(f) => f.get(Key::Policy).and_then(|e| match &e.value {
            Value::Path(p) => Some(Given {
                value: p.clone(),
                from: format!("policy in {}:{}", f.path.display(), e.line),
            }),
            _ => None,
        }),
        Layer::Env => env(Key::Policy).map(|p| Given {
            value: p.into(),
            from: Key::Policy.env().into(),
        }),
    });
    let checks = layers
        .iter()
        .find_map(|layer| match layer {
            Layer::Flags => (!flags.check.is_empty()).then(|| flags.check.to_vec()),
            Layer::File(f) => f.get(Key::Check).and_then(|e| match &e.value {
                Value::Texts(t) => Some(t.clone()),
                _ => None,
            }),
            Layer::Env => env(Key::Check).map(|c| vec![c]),
        })
        .unwrap_or_default();
    let namer = layers.iter().find_map(|layer| match layer {
        Layer::Flags => flags.namer.map(|n| Given {
            value: n.trim().to_owned(),
            from: "--namer".into(),
        }),
        Layer::File(f) => f.get(Key::Namer).and_then(|e| match &e.value {
            Value::Text(t) => Some(Given {
                value: t.trim().to_owned(),
                from: format!("namer in {}:{}", f.path.display(), e.line),
            }),
            _ => None,
        }),
        Layer::Env => env(Key::Namer).map(|n| Given {
            value: n.trim().to_owned(),
            from: Key::Namer.env().into(),
        }),
    });
    drop(layers);
    Ok(Settings {
        worker,
        auditor,
        policy,
        checks,
        namer,
        files,
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Worker,
    Auditor,
}

impl Role {
    fn keys(self) -> (Key, Key) {
        match self {
            Role::Worker => (Key::Worker, Key::WorkerCmd),
            Role::Auditor => (Key::Auditor, Key::AuditorCmd),
        }
    }
}

/// The first layer that names an agent or a command line for `role`. An agent of `cmd` (as
/// `oneshot run` reads it) says "a command line", which a later layer may then give.
fn player(layers: &[Layer], flags: &Flags, role: Role) -> Option<Given<String>> {
    let (agent_key, cmd_key) = role.keys();
    let mut want_cmd = false;
    for layer in layers {
        let (agent, cmd) = match layer {
            Layer::Flags => {
                let (a, c) = match role {
                    Role::Worker => (flags.worker, flags.worker_cmd),
                    Role::Auditor => (flags.auditor, flags.auditor_cmd),
                };
                let flag = |k: Key, v: Option<&str>| v.map(|v| (v.to_owned(), format!("--{k}")));
                (flag(agent_key, a), flag(cmd_key, c))
            }
            Layer::File(f) => {
                let text = |k: Key| {
                    f.get(k).and_then(|e| match &e.value {
                        Value::Text(t) => {
                            Some((t.clone(), format!("{k} in {}:{}", f.path.display(), e.line)))
                        }
                        _ => None,
                    })
                };
                (text(agent_key), text(cmd_key))
            }
            Layer::Env => {
                let var = |k: Key| env(k).map(|v| (v, k.env().to_owned()));
                (var(agent_key), var(cmd_key))
            }
        };
        if let Some((agent, from)) = agent.filter(|(a, _)| !a.trim().is_empty())
            && !want_cmd
        {
            if !agent.trim().eq_ignore_ascii_case("cmd") {
                return Some(Given {
                    value: agent.trim().to_owned(),
                    from,
                });
            }
            want_cmd = true;
        }
        if let Some((cmd, from)) = cmd {
            return Some(Given {
                value: format!("cmd:{cmd}"),
                from,
            });
        }
    }
    None
}

/// An environment variable's value, when it is set and not empty.
fn env(key: Key) -> Option<String> {
    std::env::var(key.env())
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// The error for a role nothing gave: every way to give it, and which files were read.
fn missing(role: Role, source: &Path, files: &Files) -> anyhow::Error {
    let (agent, cmd) = role.keys();
    let read = |f: &Option<ConfigFile>, none: String| match f {
        Some(f) => format!("{} sets neither", f.path.display()),
        None => none,
    };
    let project = read(
        &files.project,
        format!("no oneshot.toml at or above {}", source.display()),
    );
    let user = read(
        &files.user,
        match oneshot::config::user_file(|k| std::env::var_os(k)) {
            Some(path) => format!("no {}", path.display()),
            None => "no home directory to hold one".into(),
        },
    );
    usage(format!(
        "create the job: it needs {article} {agent}: --{agent} AGENT[:MODEL] (claude, codex, \
         gemini, aider, cline) or --{cmd} CMDLINE; or `{agent}` / `{cmd}` in the oneshot.toml \
         of the job's --source ({project}) or in your config.toml ({user}); or {} / {}. \
         E.g. --{agent} claude or --{cmd} 'sh {ex}.sh'",
        agent.env(),
        cmd.env(),
        article = if role == Role::Worker { "a" } else { "an" },
        ex = if role == Role::Worker { "fix" } else { "check" },
    ))
}
