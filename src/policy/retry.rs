//! `limits.retry`: how transient provider failures (5xx, 529, 429, connection refused, a cut
//! stream) are retried. The engine applies it; this file parses it and computes the delays.

use super::limits::{duration, number, shown, table_keys};
use super::schema::SchemaError;
use mlua::Table;
use std::time::Duration;

/// The keys a `limits.retry` table may contain.
pub const RETRY_KEYS: [&str; 4] = ["attempts", "initial_delay", "factor", "max_delay"];

/// Retry schedule for transient provider failures: exponential backoff, capped.
///
/// `factor` is an `f64` so a policy can ask for gentle growth (`1.5`); it must be at least 1,
/// so a delay never shrinks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryLimits {
    /// How many times one transient failure is retried (default 3); 0 disables retrying.
    pub attempts: u32,
    /// The wait before the first retry (default 2 s).
    pub initial_delay: Duration,
    /// Each later wait is the previous one times this (default 2).
    pub factor: f64,
    /// No wait is longer than this (default 60 s).
    pub max_delay: Duration,
}

impl Default for RetryLimits {
    fn default() -> Self {
        RetryLimits {
            attempts: 3,
            initial_delay: Duration::from_secs(2),
            factor: 2.0,
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryLimits {
    /// The wait before retry number `attempt` (1-based; 0 is treated as 1):
    /// `initial_delay * factor^(attempt - 1)`, never more than `max_delay`.
    pub fn delay(&self, attempt: u32) -> Duration {
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = self.initial_delay.as_secs_f64() * self.factor.powi(exponent);
        // An overflow (inf) or a huge value is simply "as long as allowed".
        match Duration::try_from_secs_f64(secs) {
            Ok(d) => d.min(self.max_delay),
            Err(_) => self.max_delay,
        }
    }

    /// Reads a `limits.retry` table; missing keys keep their defaults, unknown ones fail.
    pub(crate) fn from_table(table: &Table) -> Result<RetryLimits, SchemaError> {
        let mut retry = RetryLimits::default();
        for (key, value) in table_keys(table, "limits.retry", &RETRY_KEYS)? {
            let name = format!("limits.retry.{key}");
            match key.as_str() {
                "attempts" => {
                    retry.attempts = whole(&name, &value, 0.0)? as u32;
                }
                "initial_delay" => retry.initial_delay = duration(&name, &value)?,
                "max_delay" => retry.max_delay = duration(&name, &value)?,
                _ => {
                    retry.factor = match number(&value) {
                        Some(f) if f.is_finite() && f >= 1.0 => f,
                        _ => {
                            return Err(SchemaError::keyed(
                                &name,
                                format!(
                                    "{name} must be a number of at least 1, not {}",
                                    shown(&value)
                                ),
                            ));
                        }
                    }
                }
            }
        }
        Ok(retry)
    }
}

/// A whole number in `min..=u32::MAX` (as f64, for the caller to narrow).
pub(super) fn whole(name: &str, value: &mlua::Value, min: f64) -> Result<f64, SchemaError> {
    match number(value) {
        Some(n) if n.fract() == 0.0 && (min..=f64::from(u32::MAX)).contains(&n) => Ok(n),
        _ => Err(SchemaError::keyed(
            name,
            format!(
                "{name} must be a whole number of at least {min}, not {}",
                shown(value)
            ),
        )),
    }
}
