//! Egress: what an agent's connections through the proxy may reach. (A placeholder with the
//! shared type only; the proxy's half lands over it.)

/// The static rules of a policy's `network = { allow = {...}, deny = {...} }` table.
/// Patterns: exact host `pypi.org`, wildcard `*.npmjs.org` (any depth of subdomain, not the
/// apex), an IP literal, an IP with a CIDR `10.0.0.0/8`, optional `:PORT` suffix. Deny wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkRules {
    /// Hosts (patterns) an agent may reach.
    pub allow: Vec<String>,
    /// Hosts (patterns) an agent may never reach, even when `allow` or the hook says yes.
    pub deny: Vec<String>,
}
