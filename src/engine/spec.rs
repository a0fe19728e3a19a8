//! How a session is made and how the engine is wired to its surroundings: the front door an
//! embedding program uses.

use super::{Engine, EngineError};
use crate::policy::{PolicyHost, PolicyOptions, ReloadMode, TrustStore};
use crate::session::SessionSettings;
use crate::store::Store;
use std::path::PathBuf;

/// How the engine treats the policy while a session runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// When an edited policy file is loaded into the running session.
    pub reload: ReloadMode,
    /// Where trusted policy hashes are kept; `None` uses `$ONESHOT_TRUST_FILE` or the user's
    /// data directory.
    pub trust: Option<TrustStore>,
    /// Budgets and module paths for policies the engine loads itself (a reload, the recorded
    /// policy on resume).
    pub policy_options: PolicyOptions,
    /// Limits that replace the policy's for this session (kept in its settings).
    pub limits: crate::session::LimitOverrides,
    /// Confine the agents (Landlock) away from oneshot's key, trust store and state
    /// (default: on; kept in its settings).
    pub sandbox: bool,
    /// What the agents' network is (`--network`; default: the policy's allowlist; kept in its
    /// settings).
    pub network: crate::process::NetworkMode,
    /// Checks of the session's own, run after the policy's at every audit (`--check`; kept in
    /// its settings).
    pub checks: Vec<crate::check::Check>,
}

impl Default for Options {
    /// Automatic reload, the user's trust store, default policy budgets, no limit overridden,
    /// agents confined.
    fn default() -> Self {
        Options {
            reload: ReloadMode::default(),
            trust: None,
            policy_options: PolicyOptions::default(),
            limits: crate::session::LimitOverrides::default(),
            sandbox: true,
            network: crate::process::NetworkMode::Policy,
            checks: Vec::new(),
        }
    }
}

impl Options {
    /// The settings these options amount to, as the state file keeps them (module directories
    /// made absolute, so a resume from elsewhere finds them).
    pub fn settings(&self) -> SessionSettings {
        SessionSettings {
            hook_budget_ms: self.policy_options.hook_budget.as_millis() as u64,
            module_paths: self
                .policy_options
                .module_paths
                .iter()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
                .collect(),
            reload: self.reload,
            limits: self.limits.clone(),
            sandbox: self.sandbox,
            network: self.network,
            checks: self.checks.clone(),
        }
    }

    /// Options that run a session as `settings` say (default memory limit, watchdog and trust
    /// store): how a resume continues a session unless told otherwise.
    pub fn from_settings(settings: &SessionSettings) -> Options {
        Options {
            reload: settings.reload,
            trust: None,
            policy_options: PolicyOptions {
                hook_budget: std::time::Duration::from_millis(settings.hook_budget_ms),
                module_paths: settings.module_paths.clone(),
                ..PolicyOptions::default()
            },
            limits: settings.limits.clone(),
            sandbox: settings.sandbox,
            network: settings.network,
            checks: settings.checks.clone(),
        }
    }
}

/// A new session: the task, the two commands, where they run, and the policy.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = oneshot::Store::new(".oneshot");
/// let mut engine = oneshot::SessionBuilder::new("make the tests pass")
///     .worker("sh fix.sh")
///     .auditor("sh check.sh")
///     .create(&store)?;
/// let outcome = engine.run_blocking(|u| println!("{u:?}"))?;
/// println!("{}", outcome.state);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SessionBuilder {
    pub(super) task: String,
    pub(super) worker: Option<String>,
    pub(super) auditor: Option<String>,
    pub(super) agents: crate::session::Agents,
    pub(super) workdir: Option<PathBuf>,
    pub(super) policy: Option<PolicyHost>,
    pub(super) options: Options,
}

impl SessionBuilder {
    /// A session for `task` (the worker's first prompt).
    pub fn new(task: impl Into<String>) -> SessionBuilder {
        SessionBuilder {
            task: task.into(),
            worker: None,
            auditor: None,
            agents: crate::session::Agents::default(),
            workdir: None,
            policy: None,
            options: Options::default(),
        }
    }

    /// The worker command line, split with shell-word rules and run without a shell.
    pub fn worker(mut self, command: impl Into<String>) -> SessionBuilder {
        self.worker = Some(command.into());
        self
    }

    /// The auditor command line.
    pub fn auditor(mut self, command: impl Into<String>) -> SessionBuilder {
        self.auditor = Some(command.into());
        self
    }

    /// An agent CLI as the worker (Claude Code, Codex, Gemini CLI, Aider), driven over its own
    /// protocol; replaces [`SessionBuilder::worker`].
    pub fn worker_agent(mut self, agent: crate::agent::AgentSpec) -> SessionBuilder {
        self.agents.worker = Some(agent);
        self
    }

    /// An agent CLI as the auditor; replaces [`SessionBuilder::auditor`].
    pub fn auditor_agent(mut self, agent: crate::agent::AgentSpec) -> SessionBuilder {
        self.agents.auditor = Some(agent);
        self
    }

    /// Where the agents run (default: the current directory).
    pub fn workdir(mut self, dir: impl Into<PathBuf>) -> SessionBuilder {
        self.workdir = Some(dir.into());
        self
    }

    /// The policy that makes the judgement calls (default: the built-in one).
    pub fn policy(mut self, policy: PolicyHost) -> SessionBuilder {
        self.policy = Some(policy);
        self
    }

    /// How the policy is reloaded and trusted while the session runs.
    pub fn options(mut self, options: Options) -> SessionBuilder {
        self.options = options;
        self
    }

    /// Creates the session in `store` (state CREATED, written to disk) and returns the engine
    /// that drives it. Fails before anything is written if a command is missing or unusable.
    pub fn create(self, store: &Store) -> Result<Engine, EngineError> {
        Engine::create(store, self)
    }
}
