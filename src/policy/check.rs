//! `oneshot policy check`: load and validate a policy, and describe what it defines.

use super::failmode::FailMode;
use super::host::read_policy;
use super::{Limits, PolicyError, PolicyHost, PolicyOptions, testing};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What `policy check` found in a policy that loads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    /// The file checked.
    pub file: PathBuf,
    /// Its content hash (`sha256:…`), as decisions record it.
    pub hash: String,
    /// The keys it defines, guards as `guards[FROM -> TO]` ([`PolicyHost::hooks`]).
    pub hooks: Vec<String>,
    /// The effective limits, defaults filled in.
    pub limits: EffectiveLimits,
    /// Whether the worker's next iteration continues its own conversation.
    pub continue_conversation: bool,
    /// Every hook's failure mode, `on_error` applied.
    pub fail_modes: Vec<(String, FailMode)>,
    /// Absolute paths of the modules it loaded.
    pub modules: Vec<PathBuf>,
    /// Its extra secret patterns.
    pub redact: Vec<String>,
    /// How many tests it has (`tests` key plus the sibling `NAME_test.lua`).
    pub tests: usize,
}

/// [`Limits`] as a report shows them: durations as humantime strings (`"5m"`), `None` for
/// "no limit".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectiveLimits {
    /// Worker iterations per session.
    pub max_iterations: u32,
    /// Times the auditor is asked again when its answer holds no verdict.
    pub verdict_reasks: u32,
    /// Silence that kills an agent.
    pub inactivity_timeout: String,
    /// Wall-clock cap per worker run.
    pub worker_timeout: Option<String>,
    /// Wall-clock cap per auditor run.
    pub auditor_timeout: Option<String>,
    /// SIGTERM → SIGKILL delay.
    pub grace_period: String,
    /// How long a worker's run waits on its agent's background tasks alone.
    pub background_wait: String,
    /// The retry schedule for transient provider failures.
    pub retry: EffectiveRetry,
    /// The per-session budgets.
    pub budget: EffectiveBudget,
    /// Memory per agent, in bytes (`None`: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
    /// Processes per agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids: Option<u32>,
    /// CPU cores per agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    /// Memory the machine keeps free before another agent starts, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserve: Option<u64>,
}

/// [`super::RetryLimits`] as a report shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectiveRetry {
    /// Retries per transient failure (0: none).
    pub attempts: u32,
    /// The first wait.
    pub initial_delay: String,
    /// The growth of each later wait.
    pub factor: f64,
    /// The longest wait.
    pub max_delay: String,
}

/// [`super::Budget`] as a report shows it (`None`: no budget).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectiveBudget {
    /// Agent turns per session.
    pub turns: Option<u32>,
    /// Tokens per session.
    pub tokens: Option<u64>,
    /// Dollars per session.
    pub usd: Option<f64>,
}

impl From<&Limits> for EffectiveLimits {
    fn from(l: &Limits) -> Self {
        let d = |d: Duration| humantime::format_duration(d).to_string();
        EffectiveLimits {
            max_iterations: l.max_iterations,
            verdict_reasks: l.verdict_reasks,
            inactivity_timeout: d(l.inactivity_timeout),
            worker_timeout: l.worker_timeout.map(d),
            auditor_timeout: l.auditor_timeout.map(d),
            grace_period: d(l.grace_period),
            background_wait: d(l.background_wait),
            retry: EffectiveRetry {
                attempts: l.retry.attempts,
                initial_delay: d(l.retry.initial_delay),
                factor: l.retry.factor,
                max_delay: d(l.retry.max_delay),
            },
            budget: EffectiveBudget {
                turns: l.budget.turns,
                tokens: l.budget.tokens,
                usd: l.budget.usd,
            },
            memory: l.memory,
            pids: l.pids,
            cpu: l.cpu,
            reserve: l.reserve,
        }
    }
}

/// Loads and validates the policy at `path` exactly as a session would (every load error, with
/// its `file:line`, is an `Err`), loads its test file to count the tests (a broken test file is
/// an error too), and reports what it defines.
pub fn check(path: &Path, opts: PolicyOptions) -> Result<CheckReport, PolicyError> {
    let source = read_policy(path)?;
    let host = PolicyHost::load_source(path, &source, &opts)?;
    let tests = testing::count(&host, path, &source)?;
    Ok(CheckReport {
        file: path.to_path_buf(),
        hash: host.hash().to_string(),
        hooks: host.hooks(),
        limits: host.limits().into(),
        continue_conversation: host.continue_conversation(),
        fail_modes: host.fail_modes(),
        modules: host.sources().iter().skip(1).cloned().collect(),
        redact: host.redact_patterns().to_vec(),
        tests,
    })
}

impl CheckReport {
    /// The human summary `policy check` prints.
    pub fn render(&self) -> String {
        let list = |items: Vec<String>| {
            if items.is_empty() {
                "(none)".to_string()
            } else {
                items.join(", ")
            }
        };
        let l = &self.limits;
        let none = || "none".to_string();
        let modes = self
            .fail_modes
            .iter()
            .map(|(h, m)| format!("{h}={}", m.as_str()))
            .collect();
        format!(
            "{file}: ok ({hash})\n\
             hooks:      {hooks}\n\
             limits:     max_iterations={mi} verdict_reasks={vr} inactivity_timeout={it} \
             worker_timeout={wt} auditor_timeout={at} grace_period={gp} \
             background_wait={bw}\n\
             retry:      attempts={ra} initial_delay={ri} factor={rf} max_delay={rm}\n\
             budget:     turns={bt} tokens={bk} usd={bu}\n\
             options:    continue_conversation={cc}\n\
             fail modes: {modes}\n\
             modules:    {modules}\n\
             redact:     {redact}\n\
             tests:      {tests}\n",
            file = self.file.display(),
            hash = self.hash,
            hooks = list(self.hooks.clone()),
            mi = l.max_iterations,
            vr = l.verdict_reasks,
            it = l.inactivity_timeout,
            wt = l.worker_timeout.clone().unwrap_or_else(none),
            at = l.auditor_timeout.clone().unwrap_or_else(none),
            gp = l.grace_period,
            bw = l.background_wait,
            ra = l.retry.attempts,
            ri = l.retry.initial_delay,
            rf = l.retry.factor,
            rm = l.retry.max_delay,
            bt = l.budget.turns.map_or_else(none, |n| n.to_string()),
            bk = l.budget.tokens.map_or_else(none, |n| n.to_string()),
            bu = l.budget.usd.map_or_else(none, |n| n.to_string()),
            cc = self.continue_conversation,
            modes = list(modes),
            modules = list(
                self.modules
                    .iter()
                    .map(|m| m.display().to_string())
                    .collect()
            ),
            redact = list(self.redact.clone()),
            tests = self.tests,
        )
    }
}
