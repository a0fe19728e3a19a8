//! What a sandboxed agent starts from: how it is pointed at its model API (when oneshot holds
//! the key), the environment it inherits less the credentials the policy does not pass, and
//! the ports of the host's loopback it reaches at the same address. One reading for every
//! agent oneshot starts (a session's worker and auditor, an ask's target), so none differs.

use super::egress::NetworkRules;
use super::env::EnvRules;
use super::pointing::{AgentWords, ModelApi, Pointing};
use std::ffi::OsString;
use std::path::Path;

/// The agent, as the outfit needs it.
#[derive(Debug, Clone, Copy)]
pub struct Wearer<'a> {
    /// Its model API, when oneshot knows it (a known agent CLI).
    pub api: Option<&'a ModelApi>,
    /// The variables holding its own credentials: kept unless the proxy holds its key.
    pub credential_vars: &'a [&'a str],
    /// Its command line, where oneshot's words go, and its config directory.
    pub words: AgentWords<'a>,
    /// Variables set for this run besides the inherited ones.
    pub extra_env: &'a [(String, String)],
}

/// What the agent starts from.
#[derive(Debug, Clone)]
pub struct Outfit {
    /// How it is pointed at its model API through the proxy, when oneshot holds the key.
    pub model: Option<Pointing>,
    /// The inherited environment, less what the rules drop.
    pub env: Vec<(OsString, OsString)>,
    /// The names left out (never their values), sorted.
    pub dropped: Vec<String>,
    /// Ports of the host's loopback the agent reaches at the same address: its model API on
    /// a local server, and loopback addresses the policy allows by name.
    pub forwards: Vec<u16>,
}

/// The outfit of `agent`, from oneshot's own environment `vars`; `proxy` says whether it gets
/// the egress proxy (only then can the proxy hold its key), `filter` whether its environment
/// is filtered (a confined agent's is).
pub fn outfit(
    agent: Wearer<'_>,
    vars: &[(OsString, OsString)],
    env_rules: &EnvRules,
    network: &NetworkRules,
    proxy: bool,
    filter: bool,
) -> Outfit {
    let var = |k: &str| {
        vars.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    };
    let model = agent
        .api
        .filter(|_| proxy)
        .and_then(|api| api.point(&var, agent.words));
    let mut keep = super::env::named_by_argv(agent.words.argv.iter().map(String::as_str));
    if model.is_none() {
        keep.extend(agent.credential_vars.iter().map(|v| v.to_string()));
    }
    let keep: Vec<&str> = keep.iter().map(String::as_str).collect();
    let (env, dropped) = if filter {
        let f = super::env::filter(vars.iter().cloned(), env_rules, &keep);
        (f.kept, f.dropped)
    } else {
        (vars.to_vec(), Vec::new())
    };
    let inherited: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into()))
        .collect();
    let mut forwards = super::gateway::loopback_ports(
        inherited
            .iter()
            .chain(agent.extra_env)
            .map(|(k, v)| (k.as_str(), v.as_str())),
        agent.words.argv.iter().map(String::as_str),
    );
    // A loopback address the policy allows by name (`"localhost:11434"`): a local server the
    // agent reaches at the same address.
    forwards.extend(
        network
            .allow
            .iter()
            .filter_map(|a| super::gateway::loopback_port(a)),
    );
    forwards.sort_unstable();
    forwards.dedup();
    Outfit {
        model,
        env,
        dropped,
        forwards,
    }
}

/// The home directory in `vars`, for an agent's config directory.
pub fn home(vars: &[(OsString, OsString)]) -> Option<&Path> {
    vars.iter()
        .find(|(n, _)| n == "HOME")
        .map(|(_, v)| Path::new(v.as_os_str()))
}
