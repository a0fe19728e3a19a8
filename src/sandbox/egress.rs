//! What an agent may reach on the network: the request the egress proxy asks about, the answer,
//! who answers (the policy's `network` table, then its `egress` hook) and which addresses are
//! refused whatever the name (loopback, private ranges, link-local, cloud metadata) unless a
//! rule names the host itself.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::pin::Pin;

use crate::process::Role;

/// One connection an agent asks the egress proxy to open that the policy's lists do not
/// decide: what the policy's `egress` hook is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressQuery {
    /// The host asked for (a name or an IP literal), as the agent wrote it.
    pub host: String,
    /// The port asked for.
    pub port: u16,
    /// The agent asking (`claude`, `codex`, …).
    pub agent: String,
    /// The role it runs as.
    pub role: Role,
}

/// The rule of the default answer, when neither the lists nor the hook decide.
pub const DEFAULT_DENY_RULE: &str = "not on the policy's allowlist";

/// One connection an agent asks the proxy to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressRequest {
    /// The host as the agent named it (a name or an IP literal, IPv6 without brackets).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The agent's name (`claude`, `codex`, …).
    pub agent: String,
    /// The side of the loop it plays.
    pub role: Role,
}

/// The answer: allowed (by which rule; `private_ok` when the rule names the host itself, so a
/// private/loopback address it resolves to is allowed too) or refused (by which rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressAnswer {
    /// The connection may be opened.
    Allow {
        /// The rule that allowed it, as a person reads it (`network.allow "pypi.org"`).
        rule: String,
        /// The rule names the host itself: a forbidden address it resolves to is allowed.
        private_ok: bool,
    },
    /// The connection is refused.
    Deny {
        /// The rule that refused it, as a person reads it.
        rule: String,
    },
}

/// Who answers (the policy's `network` table, then its `egress` hook). Async: the session's
/// implementation asks the policy on the policy's own thread.
pub trait EgressJudge: Send + Sync + 'static {
    /// Answers one request. The proxy treats a panic or no answer in time as a refusal.
    fn judge(&self, req: EgressRequest) -> Pin<Box<dyn Future<Output = EgressAnswer> + Send>>;
}

/// The static rules of a policy's `network = { allow = {...}, deny = {...} }` table.
/// Patterns: exact host `pypi.org`, wildcard `*.npmjs.org` (any depth of subdomain, not the
/// apex), `*` (any host), an IP literal, an IP with a CIDR `10.0.0.0/8`, optional `:PORT`
/// suffix (`[::1]:8080` for an IPv6 literal with a port). Deny wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkRules {
    /// Patterns allowed.
    pub allow: Vec<String>,
    /// Patterns refused, even when an allow pattern matches too.
    pub deny: Vec<String>,
}

/// A pattern that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("network pattern {pattern:?}: {why}")]
pub struct PatternError {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl NetworkRules {
    /// `Some(answer)` when a list decides; `None` leaves it to the hook (then the default: deny,
    /// rule "not on the policy's allowlist").
    pub fn decide(&self, host: &str, port: u16) -> Option<EgressAnswer> {
        let host = normalize(host);
        // A pattern that cannot be read matches nothing; `check` reports it when the policy loads.
        fn hit<'a>(list: &'a [String], host: &str, port: u16) -> Option<(&'a str, bool)> {
            list.iter().find_map(|p| {
                let pat = Pattern::parse(p).ok()?;
                pat.matches(host, port)
                    .then(|| (p.as_str(), pat.names_host()))
            })
        }
        if let Some((p, _)) = hit(&self.deny, &host, port) {
            return Some(EgressAnswer::Deny {
                rule: format!("network.deny {p:?}"),
            });
        }
        hit(&self.allow, &host, port).map(|(p, private_ok)| EgressAnswer::Allow {
            rule: format!("network.allow {p:?}"),
            private_ok,
        })
    }

    /// Reads every pattern: the first that cannot be read, with why (for the policy's loader,
    /// so that a typo in a deny list is an error rather than a rule that never matches).
    pub fn check(&self) -> Result<(), PatternError> {
        for p in self.allow.iter().chain(&self.deny) {
            Pattern::parse(p)?;
        }
        Ok(())
    }
}

/// A judge of the static lists alone: the lists, then the default refusal.
#[derive(Debug, Clone, Default)]
pub struct StaticJudge(pub NetworkRules);

impl EgressJudge for StaticJudge {
    fn judge(&self, req: EgressRequest) -> Pin<Box<dyn Future<Output = EgressAnswer> + Send>> {
        let answer = self
            .0
            .decide(&req.host, req.port)
            .unwrap_or_else(|| EgressAnswer::Deny {
                rule: DEFAULT_DENY_RULE.to_string(),
            });
        Box::pin(std::future::ready(answer))
    }
}

/// Why an address is refused unless a rule names the host itself, in words ("a private
/// address", "the cloud metadata address", …); `None` for an ordinary public address.
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(match () {
        // AWS, GCP, Azure and most clouds answer credentials here.
        _ if ip == Ipv4Addr::new(169, 254, 169, 254) => "the cloud metadata address",
        _ if ip.is_unspecified() || a == 0 => "the unspecified address",
        _ if ip.is_loopback() => "a loopback address",
        _ if ip.is_private() => "a private address",
        _ if a == 100 && (b & 0xc0) == 64 => "a shared (CGNAT) address",
        _ if ip.is_link_local() => "a link-local address",
        _ if ip.is_broadcast() => "the broadcast address",
        _ if ip.is_multicast() => "a multicast address",
        _ if a >= 240 => "a reserved address",
        _ => return None,
    })
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    // Addresses that carry an IPv4 address are judged by it: IPv4-mapped (::ffff:a.b.c.d),
    // IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:aabb:ccdd::).
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    if s[..6] == [0; 6] && !(s[6] == 0 && s[7] <= 1) {
        return forbidden_v4(embedded(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return forbidden_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return forbidden_v4(embedded(s[1], s[2]));
    }
    Some(match () {
        // AWS's metadata service over IPv6 (Nitro instances).
        _ if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) => {
            "the cloud metadata address"
        }
        _ if ip.is_unspecified() => "the unspecified address",
        _ if ip.is_loopback() => "a loopback address",
        _ if (s[0] & 0xffc0) == 0xfe80 => "a link-local address",
        _ if (s[0] & 0xfe00) == 0xfc00 => "a private (unique local) address",
        _ if ip.is_multicast() => "a multicast address",
        _ => return None,
    })
}

/// A host as the lists compare it: lower case, no trailing dot, no IPv6 brackets.
fn normalize(host: &str) -> String {
    let h = host.trim();
    let h = h
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(h);
    h.trim_end_matches('.').to_ascii_lowercase()
}

/// One pattern of a list, read.
#[derive(Debug, PartialEq, Eq)]
struct Pattern {
    host: HostPattern,
    port: Option<u16>,
}

#[derive(Debug, PartialEq, Eq)]
enum HostPattern {
    /// `*`: every host.
    Any,
    /// `pypi.org`.
    Exact(String),
    /// `*.npmjs.org`, stored as `.npmjs.org`.
    Suffix(String),
    /// `10.0.0.0/8` (an IP literal is a network of its full length).
    Net(IpAddr, u8),
}

impl Pattern {
    fn parse(pattern: &str) -> Result<Pattern, PatternError> {
        let err = |why| PatternError {
            pattern: pattern.to_string(),
            why,
        };
        let p = pattern.trim();
        if p.is_empty() {
            return Err(err("empty"));
        }
        // The port: `[v6]:port`, `host:port`; an IPv6 literal without brackets has no port.
        let (host, port) = if let Some(rest) = p.strip_prefix('[') {
            let (h, after) = rest
                .split_once(']')
                .ok_or_else(|| err("an opening [ without its ]"))?;
            match after {
                "" => (h, None),
                _ => (
                    h,
                    Some(after.strip_prefix(':').ok_or_else(|| err("text after ]"))?),
                ),
            }
        } else if p.matches(':').count() == 1 {
            let (h, port) = p.split_once(':').unwrap_or((p, ""));
            (h, Some(port))
        } else {
            (p, None)
        };
        let port = match port {
            None => None,
            Some(n) => Some(
                n.parse::<u16>()
                    .map_err(|_| err("the port is not a number"))?,
            ),
        };
        if host.trim().starts_with("*.") && host.trim().trim_end_matches('.') == "*" {
            return Err(err("a wildcard needs a domain after *."));
        }
        let host = normalize(host);
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some((ip, len)) = host.split_once('/') {
            let ip: IpAddr = ip.parse().map_err(|_| err("a CIDR needs an IP address"))?;
            let len: u8 = len
                .parse()
                .map_err(|_| err("the prefix length is not a number"))?;
            if len > max_len(ip) {
                return Err(err("the prefix length is too long for the address"));
            }
            HostPattern::Net(ip, len)
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            HostPattern::Net(ip, max_len(ip))
        } else if let Some(suffix) = host.strip_prefix("*.") {
            valid_name(suffix).map_err(err)?;
            HostPattern::Suffix(format!(".{suffix}"))
        } else {
            valid_name(&host).map_err(err)?;
            HostPattern::Exact(host)
        };
        Ok(Pattern { host, port })
    }

    /// `host` is normalized.
    fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match &self.host {
            HostPattern::Any => true,
            HostPattern::Exact(name) => host == name,
            HostPattern::Suffix(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
            HostPattern::Net(net, len) => host
                .parse::<IpAddr>()
                .is_ok_and(|ip| in_net(ip, *net, *len)),
        }
    }

    /// The pattern names the host itself (not a wildcard): an address it resolves to is the
    /// policy's explicit choice, private or not.
    fn names_host(&self) -> bool {
        matches!(self.host, HostPattern::Exact(_) | HostPattern::Net(..))
    }
}

fn max_len(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

fn in_net(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    // An IPv4-mapped IPv6 address is its IPv4 address for the lists too.
    let canon = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match (canon(ip), net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

fn valid_name(name: &str) -> Result<(), &'static str> {
    let ok = !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if ok {
        Ok(())
    } else {
        Err("not a host name (letters, digits, - and _ between dots; * only as a leading *.)")
    }
}

#[cfg(test)]
mod tests;
