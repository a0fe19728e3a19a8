//! How a session's agents are confined, as the session records it and `status` and `show`
//! report it. Finding out what this machine offers, and confining, is the executor's
//! (`executor::confine`).

/// What an agent's network is (`--network`, `network` in oneshot.toml).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum NetworkMode {
    /// Through oneshot's egress proxy alone, to the hosts the policy allows (its `network`
    /// table and `egress` hook) and the agent's own model API.
    #[default]
    Policy,
    /// Its model API alone, through the proxy; every other host is refused.
    None,
    /// The network as oneshot has it: no network namespace, no proxy.
    Open,
}

impl NetworkMode {
    /// The word on the command line and in files.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Policy => "policy",
            NetworkMode::None => "none",
            NetworkMode::Open => "open",
        }
    }
}

impl std::fmt::Display for NetworkMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for NetworkMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "policy" => Ok(NetworkMode::Policy),
            "none" => Ok(NetworkMode::None),
            "open" => Ok(NetworkMode::Open),
            other => Err(format!(
                "unknown network mode {other:?}: say \"policy\" (the policy's allowlist, the \
                 default), \"none\" (the model API alone) or \"open\" (unconfined)"
            )),
        }
    }
}

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
        /// What the agents' network is.
        #[serde(default)]
        network: NetworkMode,
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
            Sandbox::Namespaces { landlock, network } => {
                f.write_str(
                    "namespaces: the agents cannot see oneshot's key, trust store or state",
                )?;
                match network {
                    NetworkMode::Policy => {
                        f.write_str("; network through oneshot's proxy, to the policy's allowlist")?
                    }
                    NetworkMode::None => {
                        f.write_str("; network: their model API alone (--network none)")?
                    }
                    NetworkMode::Open => f.write_str("; network open (--network open)")?,
                }
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
