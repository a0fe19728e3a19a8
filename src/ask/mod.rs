//! Structured answers (seed 002): one prompt in, one JSON object out that fits a schema. The
//! target is an agent CLI (driven over its own protocol, read-only, as an auditor is) or any
//! command line; the answer is checked by oneshot itself against the schema, and a bounded
//! number of retries put the violations back in the prompt before giving up.
//!
//! # How it works
//!
//! Claude gets the schema inline (`--json-schema`; the answer is its `structured_output`),
//! Codex as a file (`--output-schema`; Codex does not check it); Gemini, Aider, Cline and
//! commands get it in the prompt, and their JSON is found in their text
//! ([`crate::schema::extract_json`]). Whatever the target, [`crate::schema::Validator::answer`]
//! decides: an answer that does not fit is asked again with what was wrong, up to
//! [`Ask::attempts`] runs in all. [`ask_with`] leaves that decision to the caller: a job's
//! panel takes any answer its policy reads a verdict in, as a session takes its auditor's.
//!
//! An agent's tool requests are answered by a policy's `permit` hook when the question carries
//! one ([`Ask::permit`]), asked as the ask's [`Ask::role`]; else by the built-in rule for that
//! role: an auditor's edits nothing, a worker's edits files inside [`Ask::dir`] only
//! ([`builtin_permit`]). The policy runs on a thread of its own ([`PolicyService`]), so an ask
//! stays `Send`. Every deny is on the answer ([`Answer::denied`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), oneshot::ask::AskError> {
//! use oneshot::ask::{Ask, Target};
//! use oneshot::schema::Registry;
//! let schema = Registry::builtin().resolve("verdict")?;
//! let ask = Ask::new(Target::Command("sh judge.sh".into()), schema, "Is the build green?");
//! let answer = oneshot::ask::ask(&ask).await?;
//! println!("{}", answer.value);
//! # Ok(())
//! # }
//! ```

mod attempt;
mod error;
mod prompt;
mod rule;
mod way_out;

pub use error::AskError;
pub use rule::builtin_permit;

use crate::agent::AgentSpec;
use crate::policy::{HookCtx, PolicyService};
use crate::process::{Role, Sandbox};
use crate::schema::Schema;
use serde_json::Value;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// What answers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// An agent CLI, driven read-only over its protocol.
    Agent(AgentSpec),
    /// A command line (split like a shell would); the prompt on its stdin, the answer on its
    /// stdout.
    Command(String),
}

impl Target {
    /// Whether the target takes the schema itself (Claude, Codex), so the prompt need not
    /// carry it.
    fn takes_schema(&self) -> bool {
        matches!(self, Target::Agent(a) if a.kind.takes_schema())
    }

    /// Its name in egress records: the agent's, or the command's program.
    fn name(&self) -> String {
        match self {
            Target::Agent(a) => a.kind.name().to_string(),
            Target::Command(c) => shell_words::split(c)
                .ok()
                .and_then(|w| w.into_iter().next())
                .map(|p| {
                    std::path::Path::new(&p)
                        .file_name()
                        .map_or(p.clone(), |n| n.to_string_lossy().into_owned())
                })
                .unwrap_or_else(|| "command".into()),
        }
    }
}

/// One question.
#[derive(Debug, Clone)]
pub struct Ask {
    /// Who answers.
    pub target: Target,
    /// What the answer must fit.
    pub schema: Schema,
    /// The question.
    pub prompt: String,
    /// How long one run may take (it is stopped then, and the ask fails).
    pub timeout: Duration,
    /// The working directory the target runs in.
    pub dir: PathBuf,
    /// Runs in all, the first included: an answer that does not fit is asked again with its
    /// violations until then.
    pub attempts: u32,
    /// Environment added for the target (a named target's `env`, its secrets resolved);
    /// oneshot's own environment passes through as well.
    pub env: Vec<(String, String)>,
    /// Confine the target (Landlock) away from oneshot's key, trust store and state, as a
    /// session's agents are (default: on).
    pub sandbox: bool,
    /// More of oneshot's own paths the target must not reach (a job's state directory), besides
    /// the sealing key, the trust store and oneshot's user directories.
    pub hidden: Vec<PathBuf>,
    /// Who answers the agent's tool requests: a policy's `permit` hook; `None`: the built-in
    /// rule for [`Ask::role`] ([`builtin_permit`]).
    pub permit: Option<Permits>,
    /// What the target is to the permit rule (the hook's `role`): an auditor (the default) may
    /// read but not edit files, as `policies/default.lua` says; a worker (a `job land`
    /// resolver) may edit, inside [`Ask::dir`] only under the built-in rule. The CLI is
    /// started as an answerer either way (its schema flags need that), so only a CLI that asks
    /// for each tool (Claude, Gemini) can edit.
    pub role: Role,
}

/// A policy answering an ask's tool requests: its `permit` hook, asked as the auditor's with
/// `ctx` (a hook failure, or a policy thread that is gone, is a deny).
#[derive(Debug, Clone)]
pub struct Permits {
    /// The policy.
    pub policy: PolicyService,
    /// What the hook sees as `ctx`.
    pub ctx: Arc<HookCtx>,
}

impl Permits {
    /// `policy`'s `permit` with a `ctx` that holds the question (`ctx.task`) and the directory
    /// it is asked in (`ctx.workdir`): what `oneshot ask --policy` gives the hook.
    pub fn for_ask(policy: PolicyService, ask: &Ask) -> Permits {
        Permits {
            policy,
            ctx: Arc::new(HookCtx {
                task: ask.prompt.clone(),
                workdir: ask.dir.display().to_string(),
                ..HookCtx::default()
            }),
        }
    }
}

/// A tool request that was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The tool's name as the agent gave it.
    pub tool: String,
    /// Why (the hook's or the built-in rule's reason).
    pub reason: String,
}

/// The default for [`Ask::timeout`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The default for [`Ask::attempts`].
pub const DEFAULT_ATTEMPTS: u32 = 3;

impl Ask {
    /// A question with the defaults: five minutes per run, three runs, the current directory.
    pub fn new(target: Target, schema: Schema, prompt: impl Into<String>) -> Ask {
        Ask {
            target,
            schema,
            prompt: prompt.into(),
            timeout: DEFAULT_TIMEOUT,
            dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            attempts: DEFAULT_ATTEMPTS,
            env: Vec::new(),
            sandbox: true,
            hidden: Vec::new(),
            permit: None,
            role: Role::Auditor,
        }
    }
}

/// An answer that fits: the object ([`ask`]), or what the caller's reading made of the
/// answer ([`ask_with`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer<T = Value> {
    /// The object.
    pub value: T,
    /// Which run gave it (1: the first).
    pub attempts: u32,
    /// The tool requests refused on the way, every run's, in order.
    pub denied: Vec<Denial>,
}

/// What [`ask_with`]'s reading makes of one run's answer: `Ok` takes it; `Err` says what was
/// wrong with it, which the next run's prompt tells the target.
pub type Reading<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send>>;

/// Asks until an answer fits the schema, or the runs are spent.
pub async fn ask(req: &Ask) -> Result<Answer, AskError> {
    let validator = req.schema.validator()?;
    ask_with(req, |text| {
        let read = validator.answer(&text).map_err(|e| e.to_string());
        Box::pin(std::future::ready(read))
    })
    .await
}

/// Asks until `read` takes an answer (each run's text, as given), or the runs are spent: what
/// [`ask`] does with the schema's check left to the caller. The target is still asked for an
/// answer that fits [`Ask::schema`].
pub async fn ask_with<T>(
    req: &Ask,
    mut read: impl FnMut(String) -> Reading<T>,
) -> Result<Answer<T>, AskError> {
    // Codex reads the schema from a file; it lives as long as the question.
    let file = crate::agent::SchemaFile::write(&req.schema.text).map_err(|e| AskError::Io {
        what: "write the schema to a file in the temp directory".to_string(),
        source: e,
    })?;
    let mut feedback: Option<String> = None;
    let mut last = String::new();
    let mut denied = Vec::new();
    let (sandbox, _) = crate::confinement::decide(
        req.sandbox,
        crate::executor::confine::available(),
        crate::sandbox::available(),
        crate::process::NetworkMode::Policy,
    );
    let confine = match sandbox {
        Sandbox::Landlock { .. } | Sandbox::Namespaces { .. } => {
            let namespaces = matches!(sandbox, Sandbox::Namespaces { .. });
            let mut hidden = req.hidden.clone();
            if let Ok(trust) = crate::policy::TrustStore::from_env() {
                hidden.push(trust.path().to_path_buf());
            }
            let kinds: Vec<_> = match &req.target {
                Target::Agent(a) => vec![a.kind],
                Target::Command(_) => Vec::new(),
            };
            Some(crate::confinement::for_agents(
                &req.dir, &hidden, &kinds, namespaces,
            ))
        }
        _ => None,
    };
    let limits = match &req.permit {
        Some(p) => p.policy.agent_limits().await,
        None => Default::default(),
    };
    let (gateway, base_env) = match &confine {
        Some(_) => {
            let (gateway, base_env) = way_out::way_out(req).await;
            (Some(gateway), Some(base_env))
        }
        None => (None, None),
    };
    for n in 1..=req.attempts.max(1) {
        let prompt = prompt::compose(
            &req.prompt,
            &req.schema,
            req.target.takes_schema(),
            feedback.as_deref(),
        );
        let run = attempt::Run {
            target: &req.target,
            prompt: &prompt,
            schema_text: &req.schema.text,
            schema_file: file.path(),
            dir: &req.dir,
            timeout: req.timeout,
            env: &req.env,
            confine: confine.as_ref(),
            gateway: gateway.clone(),
            base_env: base_env.clone(),
            limits,
            permit: req.permit.as_ref(),
            role: req.role,
        };
        let text = run.answer(&mut denied).await?;
        match read(text.clone()).await {
            Ok(value) => {
                return Ok(Answer {
                    value,
                    attempts: n,
                    denied,
                });
            }
            Err(e) => {
                feedback = Some(e);
                last = text;
            }
        }
    }
    Err(AskError::NoFit {
        attempts: req.attempts.max(1),
        problems: feedback.unwrap_or_default(),
        answer: last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ask must stay `Send` with a policy's `permit` on it: eval runs asks on a `JoinSet`.
    #[test]
    fn an_ask_with_a_policy_is_send() {
        fn send<T: Send>(_: &T) {}
        fn shared<T: Send + Sync>() {}
        shared::<Ask>();
        shared::<Permits>();
        let schema = crate::schema::Registry::builtin()
            .resolve("verdict")
            .unwrap();
        let ask = Ask::new(Target::Command("true".into()), schema, "q");
        // Not awaited: only its type is checked.
        send(&super::ask(&ask));
    }
}
