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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveLimits {
    /// Worker iterations per session.
    pub max_iterations: u32,
    /// Silence that kills an agent.
    pub inactivity_timeout: String,
    /// Wall-clock cap per worker run.
    pub worker_timeout: Option<String>,
    /// Wall-clock cap per auditor run.
    pub auditor_timeout: Option<String>,
    /// SIGTERM → SIGKILL delay.
    pub grace_period: String,
}

impl From<&Limits> for EffectiveLimits {
    fn from(l: &Limits) -> Self {
        let d = |d: Duration| humantime::format_duration(d).to_string();
        EffectiveLimits {
            max_iterations: l.max_iterations,
            inactivity_timeout: d(l.inactivity_timeout),
            worker_timeout: l.worker_timeout.map(d),
            auditor_timeout: l.auditor_timeout.map(d),
            grace_period: d(l.grace_period),
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
             limits:     max_iterations={mi} inactivity_timeout={it} worker_timeout={wt} \
             auditor_timeout={at} grace_period={gp}\n\
             fail modes: {modes}\n\
             modules:    {modules}\n\
             redact:     {redact}\n\
             tests:      {tests}\n",
            file = self.file.display(),
            hash = self.hash,
            hooks = list(self.hooks.clone()),
            mi = l.max_iterations,
            it = l.inactivity_timeout,
            wt = l.worker_timeout.clone().unwrap_or_else(none),
            at = l.auditor_timeout.clone().unwrap_or_else(none),
            gp = l.grace_period,
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
