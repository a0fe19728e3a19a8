//! `--policy-reload auto|trusted|off`: when a changed policy file may be activated.

use std::fmt;
use std::str::FromStr;

/// How a running session treats edits to its policy files.
///
/// The point of the distinction is that a worker can write inside its workdir: a policy there
/// is one the agent could rewrite to approve itself, so its edits wait for a human's trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReloadMode {
    /// Files outside the workdir reload freely; a changed file inside it waits until trusted.
    #[default]
    Auto,
    /// Every changed file must be trusted (`oneshot policy trust FILE`) before it is activated.
    Trusted,
    /// Never reload: the policy loaded at start stays for the whole session.
    Off,
}

impl ReloadMode {
    /// The spellings `--policy-reload` accepts, in documentation order.
    pub const NAMES: [&str; 3] = ["auto", "trusted", "off"];
}

/// A `--policy-reload` value that is not one of [`ReloadMode::NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy reload mode {0:?}; expected auto, trusted or off")]
pub struct ParseReloadModeError(
    /// The value that was given.
    pub String,
);

impl FromStr for ReloadMode {
    type Err = ParseReloadModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(ReloadMode::Auto),
            "trusted" => Ok(ReloadMode::Trusted),
            "off" => Ok(ReloadMode::Off),
            other => Err(ParseReloadModeError(other.to_string())),
        }
    }
}

impl fmt::Display for ReloadMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReloadMode::Auto => "auto",
            ReloadMode::Trusted => "trusted",
            ReloadMode::Off => "off",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in ReloadMode::NAMES {
            let mode: ReloadMode = name.parse().unwrap();
            assert_eq!(mode.to_string(), name);
        }
        assert_eq!(ReloadMode::default(), ReloadMode::Auto);
        let err = "sometimes".parse::<ReloadMode>().unwrap_err();
        assert!(err.to_string().contains("\"sometimes\""), "{err}");
    }
}
