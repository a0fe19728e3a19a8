//! How a session's agents are confined, as the session records it and `status` and `show`
//! report it. Finding out what this machine offers, and confining, is the executor's
//! (`executor::confine`).

/// How the agents of a session are confined, as `status` and `show` report it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Sandbox {
    /// Landlock, at this ABI version.
    Landlock {
        /// The kernel's Landlock ABI.
        abi: u32,
    },
    /// The user turned it off (`--sandbox off`, `sandbox = false`).
    Off,
    /// The kernel offers no Landlock: the agents run unconfined.
    Unavailable {
        /// Why, as the kernel said.
        why: String,
    },
}

impl std::fmt::Display for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sandbox::Landlock { abi } => write!(
                f,
                "landlock (ABI {abi}): the agents cannot reach oneshot's key, trust store or state"
            ),
            Sandbox::Off => f.write_str("off (--sandbox off): the agents run unconfined"),
            Sandbox::Unavailable { why } => write!(
                f,
                "unavailable ({why}): the agents run unconfined, and could read oneshot's key"
            ),
        }
    }
}
