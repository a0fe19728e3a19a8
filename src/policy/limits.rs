//! The `limits` table: iteration budget and process timeouts.

use super::lua_ctx::type_name;
use super::schema::{SchemaError, suggest};
use mlua::{Table, Value};
use std::time::Duration;

/// The keys a `limits` table may contain.
pub const LIMIT_KEYS: [&str; 5] = [
    "max_iterations",
    "inactivity_timeout",
    "worker_timeout",
    "auditor_timeout",
    "grace_period",
];

/// Budgets the engine enforces for a session. Missing keys take the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How many worker iterations a session may use (default 5).
    pub max_iterations: u32,
    /// Silence on stdout and stderr for this long kills a running agent (default 5 minutes).
    pub inactivity_timeout: Duration,
    /// Wall-clock cap for one worker run (default none).
    pub worker_timeout: Option<Duration>,
    /// Wall-clock cap for one auditor run (default none).
    pub auditor_timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when stopping an agent's process group (default 5s).
    pub grace_period: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_iterations: 5,
            inactivity_timeout: Duration::from_secs(5 * 60),
            worker_timeout: None,
            auditor_timeout: None,
            grace_period: Duration::from_secs(5),
        }
    }
}

impl Limits {
    /// Reads a `limits` table; every key is checked so a typo fails the load instead of being
    /// silently ignored.
    pub(crate) fn from_table(table: &Table) -> Result<Limits, SchemaError> {
        let mut limits = Limits::default();
        for pair in table.pairs::<Value, Value>() {
            let (key, value) = pair.map_err(|e| SchemaError::new(e.to_string()))?;
            let key = match key {
                Value::String(s) => s.to_string_lossy(),
                other => {
                    return Err(SchemaError::new(format!(
                        "limits has a {} key; keys must be names",
                        type_name(&other)
                    )));
                }
            };
            let name = format!("limits.{key}");
            match key.as_str() {
                "max_iterations" => limits.max_iterations = iterations(&name, &value)?,
                "inactivity_timeout" => limits.inactivity_timeout = duration(&name, &value)?,
                "grace_period" => limits.grace_period = duration(&name, &value)?,
                "worker_timeout" => limits.worker_timeout = optional_duration(&name, &value)?,
                "auditor_timeout" => limits.auditor_timeout = optional_duration(&name, &value)?,
                other => {
                    return Err(SchemaError::unknown_key(
                        other,
                        "limits",
                        suggest(other, &LIMIT_KEYS),
                    ));
                }
            }
        }
        Ok(limits)
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

/// `nil` or `false` means "no limit" for the per-role timeouts.
fn optional_duration(name: &str, value: &Value) -> Result<Option<Duration>, SchemaError> {
    match value {
        Value::Nil | Value::Boolean(false) => Ok(None),
        other => duration(name, other).map(Some),
    }
}

/// Numbers are seconds (fractions allowed); strings use humantime (`"90s"`, `"1h 30m"`).
fn duration(name: &str, value: &Value) -> Result<Duration, SchemaError> {
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

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}
