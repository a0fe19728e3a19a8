//! The `limits` table: iteration budget, process timeouts, the `retry` and `budget`
//! sub-tables (parsed in `retry.rs` and `budget.rs`), and each agent's resources (`memory`,
//! `pids`, `cpu`, and the machine's `reserve`: parsed in `resources.rs`).

use super::budget::Budget;
use super::lua_ctx::{describe, type_name};
use super::resources;
use super::retry::RetryLimits;
use super::schema::{SchemaError, suggest};
use mlua::{Table, Value};
use std::time::Duration;

/// The keys a `limits` table may contain.
pub const LIMIT_KEYS: [&str; 13] = [
    "max_iterations",
    "verdict_reasks",
    "inactivity_timeout",
    "worker_timeout",
    "auditor_timeout",
    "grace_period",
    "background_wait",
    "retry",
    "budget",
    "memory",
    "pids",
    "cpu",
    "reserve",
];

/// Budgets the engine enforces for a session. Missing keys take the documented defaults.
///
/// `PartialEq` but not `Eq`: the retry factor and the dollar budget are `f64`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// How many worker iterations a session may use (default 5).
    pub max_iterations: u32,
    /// How many times the auditor is asked again, within one iteration, when its answer holds
    /// no verdict (default 2; 0: never). A worker iteration is spent only on a verdict; when
    /// the re-asks are spent too, the session fails `no_verdict`.
    pub verdict_reasks: u32,
    /// Silence on stdout and stderr for this long kills a running agent (default 5 minutes).
    pub inactivity_timeout: Duration,
    /// Wall-clock cap for one worker run (default none).
    pub worker_timeout: Option<Duration>,
    /// Wall-clock cap for one auditor run (default none).
    pub auditor_timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when stopping an agent's process group (default 5s).
    pub grace_period: Duration,
    /// How long a worker's run may wait on its agent's background tasks alone — no turn
    /// running, none owed — before they are stopped and the run ends (default 10 minutes).
    /// Inactivity is not counted while it waits.
    pub background_wait: Duration,
    /// How transient provider failures are retried (default 3 attempts, 2s doubling to 60s).
    pub retry: RetryLimits,
    /// Per-session turn, token and dollar budgets (default none).
    pub budget: Budget,
    /// Memory one agent's process tree may use, in bytes (default none): over it the agent is
    /// stopped and the session goes to recovery.
    pub memory: Option<u64>,
    /// Processes (and threads) one agent's tree may hold (default none).
    pub pids: Option<u32>,
    /// CPU cores one agent may use, such as 1.5 (default none).
    pub cpu: Option<f64>,
    /// Memory, in bytes, the machine must keep free before another agent starts (default
    /// none): `job run` holds jobs back while starting one would eat into it.
    pub reserve: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_iterations: 5,
            verdict_reasks: 2,
            inactivity_timeout: Duration::from_secs(5 * 60),
            worker_timeout: None,
            auditor_timeout: None,
            grace_period: Duration::from_secs(5),
            background_wait: Duration::from_secs(10 * 60),
            retry: RetryLimits::default(),
            budget: Budget::default(),
            memory: None,
            pids: None,
            cpu: None,
            reserve: None,
        }
    }
}

impl Limits {
    /// What the sandbox enforces on each agent: `memory`, `pids`, `cpu`.
    pub fn agent(&self) -> crate::sandbox::limits::AgentLimits {
        crate::sandbox::limits::AgentLimits {
            memory: self.memory,
            pids: self.pids,
            cpu: self.cpu,
        }
    }

    /// Reads a `limits` table; every key is checked so a typo fails the load instead of being
    /// silently ignored.
    pub(crate) fn from_table(table: &Table) -> Result<Limits, SchemaError> {
        let mut limits = Limits::default();
        for (key, value) in table_keys(table, "limits", &LIMIT_KEYS)? {
            let name = format!("limits.{key}");
            match key.as_str() {
                "max_iterations" => limits.max_iterations = iterations(&name, &value)?,
                "verdict_reasks" => limits.verdict_reasks = count(&name, &value)?,
                "inactivity_timeout" => limits.inactivity_timeout = duration(&name, &value)?,
                "grace_period" => limits.grace_period = duration(&name, &value)?,
                "background_wait" => limits.background_wait = duration(&name, &value)?,
                "worker_timeout" => limits.worker_timeout = optional_duration(&name, &value)?,
                "auditor_timeout" => limits.auditor_timeout = optional_duration(&name, &value)?,
                "retry" => limits.retry = RetryLimits::from_table(&sub_table(&name, value)?)?,
                "memory" => limits.memory = resources::memory_limit(&name, &value)?,
                "reserve" => limits.reserve = resources::memory(&name, &value)?,
                "pids" => limits.pids = resources::pids(&name, &value)?,
                "cpu" => limits.cpu = resources::cpu(&name, &value)?,
                _ => limits.budget = Budget::from_table(&sub_table(&name, value)?)?,
            }
        }
        Ok(limits)
    }
}

/// The `(key, value)` pairs of `table` (named `within` in errors), every key checked against
/// `known` so a typo fails with a suggestion.
pub(super) fn table_keys(
    table: &Table,
    within: &str,
    known: &[&str],
) -> Result<Vec<(String, Value)>, SchemaError> {
    let mut out = Vec::new();
    for pair in table.pairs::<Value, Value>() {
        let (key, value) = pair.map_err(|e| SchemaError::new(e.to_string()))?;
        let key = match key {
            Value::String(s) => s.to_string_lossy(),
            other => {
                return Err(SchemaError::new(format!(
                    "{within} has a {} key; keys must be names",
                    type_name(&other)
                )));
            }
        };
        if !known.contains(&key.as_str()) {
            return Err(SchemaError::unknown_key(&key, within, suggest(&key, known)));
        }
        out.push((key, value));
    }
    Ok(out)
}

/// `limits.retry` and `limits.budget` must be tables.
fn sub_table(name: &str, value: Value) -> Result<Table, SchemaError> {
    match value {
        Value::Table(t) => Ok(t),
        other => Err(SchemaError::keyed(
            name,
            format!("{name} must be a table, not {}", type_name(&other)),
        )),
    }
}

/// A value for an error message: numbers as written (`-1`), anything else described.
pub(super) fn shown(value: &Value) -> String {
    match number(value) {
        Some(n) => n.to_string(),
        None => describe(value),
    }
}

fn iterations(name: &str, value: &Value) -> Result<u32, SchemaError> {
    let n = number(value).ok_or_else(|| {
        SchemaError::keyed(
            name,
            format!("{name} must be a whole number, not {}", type_name(value)),
        )
    })?;
    if n.fract() != 0.0 || !(1.0..=f64::from(u32::MAX)).contains(&n) {
        return Err(SchemaError::keyed(
            name,
            format!("{name} must be a whole number of at least 1, not {n}"),
        ));
    }
    Ok(n as u32)
}

/// A whole number of at least 0.
fn count(name: &str, value: &Value) -> Result<u32, SchemaError> {
    match number(value) {
        Some(n) if n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n) => Ok(n as u32),
        Some(n) => Err(SchemaError::keyed(
            name,
            format!("{name} must be a whole number of at least 0, not {n}"),
        )),
        None => Err(SchemaError::keyed(
            name,
            format!("{name} must be a whole number, not {}", type_name(value)),
        )),
    }
}

/// `nil` or `false` means "no limit" for the per-role timeouts.
fn optional_duration(name: &str, value: &Value) -> Result<Option<Duration>, SchemaError> {
    match value {
        Value::Nil | Value::Boolean(false) => Ok(None),
        other => duration(name, other).map(Some),
    }
}

/// Numbers are seconds (fractions allowed); strings use humantime (`"90s"`, `"1h 30m"`).
pub(super) fn duration(name: &str, value: &Value) -> Result<Duration, SchemaError> {
    if let Some(secs) = number(value) {
        return Duration::try_from_secs_f64(secs).map_err(|_| {
            SchemaError::keyed(
                name,
                format!("{name} must be a non-negative number of seconds, not {secs}"),
            )
        });
    }
    if let Value::String(s) = value {
        let text = s.to_string_lossy();
        return humantime::parse_duration(text.trim()).map_err(|e| {
            SchemaError::keyed(
                name,
                format!("{name} = \"{text}\" is not a duration ({e}); try \"90s\" or \"5m\""),
            )
        });
    }
    Err(SchemaError::keyed(
        name,
        format!(
            "{name} must be seconds or a duration string like \"5m\", not {}",
            type_name(value)
        ),
    ))
}

pub(super) fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}
