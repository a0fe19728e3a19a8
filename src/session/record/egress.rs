//! `egress` records: a connection the egress proxy refused an agent (allowed ones are not
//! recorded: they are the expected case, and a busy `npm install` opens hundreds).

use crate::process::Role;
use serde::{Deserialize, Serialize};

/// `egress`: one refused connection, with the rule that refused it and the line that would
/// allow it. Also what a hook reads in `ctx.egress` (the session's refusals so far), so a
/// verdict can say a task failed because the network was closed to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressRefusal {
    /// When (unix milliseconds).
    pub ts: u64,
    /// The host as the agent asked for it (a name, or an IP literal).
    pub host: String,
    /// The port asked for.
    pub port: u16,
    /// The agent that asked (`claude`, `codex`, …).
    pub agent: String,
    /// The role it ran as.
    pub role: Role,
    /// What refused it: a `network.deny` pattern, the `egress` hook's reason, "not on the
    /// policy's allowlist", "resolves to a private address", …
    pub rule: String,
    /// The address the name resolved to, when the refusal was about the address (a name that
    /// resolves to a private or metadata address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The line to add to the policy to allow it ([`allow_hint`]); empty when no line would (a
    /// `deny` pattern wins over any `allow`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hint: String,
}

/// The policy line that allows `host`: `network = { allow = { "host" } }`. The port is left
/// out: a pattern without one allows every port, which is what a person adding a host means.
pub fn allow_hint(host: &str) -> String {
    // A Lua string literal: escape what would end or break it.
    let quoted: String = host
        .chars()
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!("network = {{ allow = {{ \"{quoted}\" }} }}")
}

/// An `egress` record in a line for people (`oneshot log`, `show`, the dashboard):
/// `egress refused: worker (claude) → evil.example:443 — not on the policy's allowlist; to
/// allow: network = { allow = { "evil.example" } }`.
pub fn egress_line(e: &EgressRefusal) -> String {
    let target = if e.host.contains(':') {
        // An IPv6 literal: bracketed, so the port reads as one.
        format!("[{}]:{}", e.host, e.port)
    } else {
        format!("{}:{}", e.host, e.port)
    };
    let address = match &e.address {
        Some(a) if *a != e.host => format!(" ({a})"),
        _ => String::new(),
    };
    let hint = if e.hint.is_empty() {
        String::new()
    } else {
        format!("; to allow: {}", e.hint)
    };
    format!(
        "egress refused: {} ({}) → {target}{address} — {}{hint}",
        e.role, e.agent, e.rule
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal() -> EgressRefusal {
        EgressRefusal {
            ts: 1,
            host: "evil.example".into(),
            port: 443,
            agent: "claude".into(),
            role: Role::Worker,
            rule: "not on the policy's allowlist".into(),
            address: None,
            hint: allow_hint("evil.example"),
        }
    }

    #[test]
    fn the_line_names_who_where_why_and_how_to_allow() {
        assert_eq!(
            egress_line(&refusal()),
            "egress refused: worker (claude) → evil.example:443 — not on the policy's \
             allowlist; to allow: network = { allow = { \"evil.example\" } }"
        );
        let e = EgressRefusal {
            host: "metadata.internal".into(),
            port: 80,
            role: Role::Auditor,
            agent: "codex".into(),
            rule: "resolves to a link-local address".into(),
            address: Some("169.254.169.254".into()),
            hint: String::new(),
            ..refusal()
        };
        assert_eq!(
            egress_line(&e),
            "egress refused: auditor (codex) → metadata.internal:80 (169.254.169.254) — \
             resolves to a link-local address"
        );
        let v6 = EgressRefusal {
            host: "fd00:ec2::254".into(),
            address: Some("fd00:ec2::254".into()),
            ..refusal()
        };
        assert!(egress_line(&v6).contains("→ [fd00:ec2::254]:443 —"));
    }

    #[test]
    fn the_hint_is_a_lua_line_even_for_odd_hosts() {
        assert_eq!(
            allow_hint(r#"a"b\c"#),
            r#"network = { allow = { "a\"b\\c" } }"#
        );
    }
}
