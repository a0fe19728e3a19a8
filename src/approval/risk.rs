//! A job's risk level: how much a mistake would cost.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How much a mistake in this job would cost: auto-approval (seed 003 §5.5) is only ever
/// considered for LOW.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum Risk {
    /// Drafts, experiments: a confident result may be approved by the policy.
    Low,
    /// Ordinary work.
    Medium,
    /// Final implementations: a human always signs off (the default).
    #[default]
    High,
}

impl Risk {
    /// The name used on the command line and in policies (`"low"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Risk {
    type Err = String;
    fn from_str(s: &str) -> Result<Risk, String> {
        match s.to_ascii_lowercase().as_str() {
            "low" => Ok(Risk::Low),
            "medium" => Ok(Risk::Medium),
            "high" => Ok(Risk::High),
            _ => Err(format!("unknown risk level {s:?}: use low, medium or high")),
        }
    }
}
