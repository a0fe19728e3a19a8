//! How a session's policy is run — hook budget, module search path, reload mode, overridden
//! limits — kept in the state file so that a `resume` runs it the way it was started unless
//! told otherwise.

use super::LimitOverrides;
use crate::policy::ReloadMode;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::path::PathBuf;

/// The policy settings a session was started (or last resumed) with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSettings {
    /// Wall-clock budget of one hook call, in milliseconds.
    pub hook_budget_ms: u64,
    /// Extra directories `require` searches (absolute).
    #[serde(default)]
    pub module_paths: Vec<PathBuf>,
    /// When an edited policy is loaded into the running session.
    #[serde(with = "reload_mode")]
    pub reload: ReloadMode,
    /// Limits that replace the policy's for this session (absent in older files: none).
    #[serde(default, skip_serializing_if = "LimitOverrides::is_empty")]
    pub limits: LimitOverrides,
    /// Whether the agents are confined (Landlock) away from oneshot's key, trust store and
    /// state; written only when turned off (`--sandbox off`).
    #[serde(default = "on", skip_serializing_if = "is_on")]
    pub sandbox: bool,
    /// What the agents' network is (`--network`); written only when not the default
    /// (`policy`).
    #[serde(default, skip_serializing_if = "is_policy")]
    pub network: crate::process::NetworkMode,
    /// Checks of the session's own (`--check`, `check = [...]` in oneshot.toml), run after the
    /// policy's at every audit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::check::Check>,
}

fn on() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference.
fn is_on(b: &bool) -> bool {
    *b
}

#[allow(clippy::trivially_copy_pass_by_ref)] // as `is_on`.
fn is_policy(n: &crate::process::NetworkMode) -> bool {
    *n == crate::process::NetworkMode::Policy
}

impl Default for SessionSettings {
    /// The command line's defaults: 100 ms, no extra module directory, `auto`.
    fn default() -> Self {
        SessionSettings {
            hook_budget_ms: 100,
            module_paths: Vec::new(),
            reload: ReloadMode::Auto,
            limits: LimitOverrides::default(),
            sandbox: true,
            network: crate::process::NetworkMode::Policy,
            checks: Vec::new(),
        }
    }
}

/// `ReloadMode` as its command-line word.
mod reload_mode {
    use super::*;

    pub fn serialize<S: Serializer>(mode: &ReloadMode, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&mode.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ReloadMode, D::Error> {
        let word = String::deserialize(d)?;
        word.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_defaults() {
        let s = SessionSettings {
            hook_budget_ms: 250,
            module_paths: vec!["/lib/lua".into()],
            reload: ReloadMode::Trusted,
            limits: LimitOverrides::default(),
            sandbox: true,
            network: crate::process::NetworkMode::Policy,
            checks: Vec::new(),
        };
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(
            json,
            r#"{"hook_budget_ms":250,"module_paths":["/lib/lua"],"reload":"trusted"}"#
        );
        assert_eq!(serde_json::from_str::<SessionSettings>(&json).unwrap(), s);
        assert!(
            serde_json::from_str::<SessionSettings>(r#"{"hook_budget_ms":1,"reload":"sometimes"}"#)
                .is_err()
        );
        let off = SessionSettings {
            sandbox: false,
            ..s
        };
        let json = serde_json::to_string(&off).unwrap();
        assert!(json.ends_with(r#""sandbox":false}"#), "{json}");
        assert_eq!(serde_json::from_str::<SessionSettings>(&json).unwrap(), off);
    }
}
