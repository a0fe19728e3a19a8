//! What a new session is made of, and how the engine is wired to its surroundings.

use super::{NullReporter, Reporter};
use crate::policy::{PolicyHost, PolicyOptions, ReloadMode, TrustStore};
use std::path::PathBuf;
use tokio::sync::watch;

/// A new session: the task, the two commands, where they run, and the policy.
pub struct SessionSpec {
    /// The task (the worker's first prompt).
    pub task: String,
    /// The worker command line (`--worker-cmd`), split with shell-word rules, no shell.
    pub worker_cmd: String,
    /// The auditor command line (`--auditor-cmd`).
    pub auditor_cmd: String,
    /// The directory the agents run in.
    pub workdir: PathBuf,
    /// The policy that makes the judgement calls.
    pub policy: PolicyHost,
}

/// The engine's connections to the outside world.
pub struct EngineOptions {
    /// Where progress goes.
    pub reporter: Box<dyn Reporter>,
    /// Interrupt requests (see [`super::interrupt_channel`]).
    pub interrupts: watch::Receiver<u32>,
    /// When an edited policy file is loaded into the running session.
    pub reload: ReloadMode,
    /// Where trusted policy hashes are kept; `None` uses `$ONESHOT_TRUST_FILE` or the user's
    /// data directory.
    pub trust: Option<TrustStore>,
    /// Budgets for reloaded policies (the first one is loaded by the caller).
    pub policy_options: PolicyOptions,
    /// Keeps the channel open when nobody else holds a sender, so the receiver waits instead
    /// of reporting a closed channel.
    pub(crate) _keepalive: Option<watch::Sender<u32>>,
}

impl EngineOptions {
    /// Options with this reporter and interrupt receiver.
    pub fn new(reporter: Box<dyn Reporter>, interrupts: watch::Receiver<u32>) -> Self {
        EngineOptions {
            reporter,
            interrupts,
            reload: ReloadMode::default(),
            trust: None,
            policy_options: PolicyOptions::default(),
            _keepalive: None,
        }
    }
}

impl Default for EngineOptions {
    fn default() -> Self {
        let (tx, rx) = super::interrupt_channel();
        EngineOptions {
            _keepalive: Some(tx),
            ..EngineOptions::new(Box::new(NullReporter), rx)
        }
    }
}
