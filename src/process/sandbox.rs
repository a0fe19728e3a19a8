//! How a session's agents are confined, as the session records it and `status` and `show`
//! report it. Finding out what this machine offers, and confining, is the executor's
//! (`executor::confine`).

/// How the agents of a session are confined, as `status` and `show` report it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Sandbox {
    /// Each agent in user, mount and network namespaces of its own (oneshot's files masked,
    /// the network through oneshot's proxy alone), with Landlock inside when the kernel has it.
    Namespaces {
        /// The kernel's Landlock ABI, the second wall; `None` when it has none.
        landlock: Option<u32>,
    },
    /// Landlock alone, at this ABI version: where user namespaces are refused (or the user
    /// chose it).
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
            Sandbox::Namespaces { landlock } => {
                f.write_str(
                    "namespaces: the agents cannot see oneshot's key, trust store or state, and \
                     reach the network only through oneshot's proxy",
                )?;
                match landlock {
                    Some(abi) => write!(f, "; landlock (ABI {abi}) inside"),
                    None => Ok(()),
                }
            }
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
