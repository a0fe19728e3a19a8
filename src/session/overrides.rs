//! Limits given outside the policy (`--max-iterations`, `--timeout`, `--inactivity-timeout`,
//! or the same keys in `oneshot.toml`): they replace the policy's values for one session, are
//! kept in its settings so a resume keeps them, and remember where each came from so the
//! history can say why a limit is not the policy's.

use crate::policy::Limits;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One overriding value and where it was given (`--max-iterations`, `/p/oneshot.toml:3`,
/// `env ONESHOT_TIMEOUT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Override<T> {
    /// The value in force.
    pub value: T,
    /// Where it was given, as a person reads it.
    pub from: String,
}

impl<T> Override<T> {
    /// `value`, given at `from`.
    pub fn new(value: T, from: impl Into<String>) -> Self {
        Override {
            value,
            from: from.into(),
        }
    }
}

/// The limits that override the policy's for one session; an absent one leaves the policy's.
/// Durations are whole milliseconds, as the state file keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitOverrides {
    /// Replaces `limits.max_iterations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<Override<u32>>,
    /// Replaces `limits.worker_timeout` (the worker's wall-clock cap), in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_timeout_ms: Option<Override<u64>>,
    /// Replaces `limits.inactivity_timeout`, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactivity_timeout_ms: Option<Override<u64>>,
}

impl LimitOverrides {
    /// Whether nothing is overridden.
    pub fn is_empty(&self) -> bool {
        self.max_iterations.is_none()
            && self.worker_timeout_ms.is_none()
            && self.inactivity_timeout_ms.is_none()
    }

    /// The policy's `limits` with these overrides applied: the one place they take effect.
    pub fn apply(&self, mut limits: Limits) -> Limits {
        if let Some(o) = &self.max_iterations {
            limits.max_iterations = o.value;
        }
        if let Some(o) = &self.worker_timeout_ms {
            limits.worker_timeout = Some(Duration::from_millis(o.value));
        }
        if let Some(o) = &self.inactivity_timeout_ms {
            limits.inactivity_timeout = Duration::from_millis(o.value);
        }
        limits
    }

    /// What is overridden and from where, for the history: `max_iterations = 1 (from
    /// --max-iterations), worker_timeout = 2m (from /p/oneshot.toml:3)`; `None` when nothing is.
    pub fn describe(&self) -> Option<String> {
        let ms = |v: u64| humantime::format_duration(Duration::from_millis(v)).to_string();
        let parts: Vec<String> = [
            self.max_iterations
                .as_ref()
                .map(|o| format!("max_iterations = {} (from {})", o.value, o.from)),
            self.worker_timeout_ms
                .as_ref()
                .map(|o| format!("worker_timeout = {} (from {})", ms(o.value), o.from)),
            self.inactivity_timeout_ms
                .as_ref()
                .map(|o| format!("inactivity_timeout = {} (from {})", ms(o.value), o.from)),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_only_what_they_name() {
        let none = LimitOverrides::default();
        assert!(none.is_empty());
        assert_eq!(none.apply(Limits::default()), Limits::default());
        assert_eq!(none.describe(), None);
        let some = LimitOverrides {
            max_iterations: Some(Override::new(1, "--max-iterations")),
            inactivity_timeout_ms: Some(Override::new(1500, "/p/oneshot.toml:3")),
            ..LimitOverrides::default()
        };
        let limits = some.apply(Limits::default());
        assert_eq!(limits.max_iterations, 1);
        assert_eq!(limits.inactivity_timeout, Duration::from_millis(1500));
        assert_eq!(limits.worker_timeout, None);
        assert_eq!(limits.grace_period, Limits::default().grace_period);
        assert_eq!(
            some.describe().unwrap(),
            "max_iterations = 1 (from --max-iterations), inactivity_timeout = 1s 500ms (from \
             /p/oneshot.toml:3)"
        );
        let json = serde_json::to_string(&some).unwrap();
        assert_eq!(serde_json::from_str::<LimitOverrides>(&json).unwrap(), some);
    }
}
