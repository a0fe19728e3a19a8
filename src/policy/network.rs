//! The sandbox's keys of a policy: `network = { allow = {...}, deny = {...} }` (what agents may
//! reach through the egress proxy) and `env = { pass = {...}, drop = {...} }` (what of oneshot's
//! environment they get). Both are checked whole at load, so a pattern the proxy or the filter
//! could not read fails the load naming its line instead of silently matching nothing.

use super::lua_ctx::type_name;
use super::schema::SchemaError;
use crate::sandbox::egress::NetworkRules;
use crate::sandbox::env::{EnvRules, check_pattern};
use mlua::{Table, Value};
use std::net::IpAddr;

/// The keys a `network` table may have.
pub const NETWORK_KEYS: [&str; 2] = ["allow", "deny"];

/// The keys an `env` table may have.
pub const ENV_KEYS: [&str; 2] = ["pass", "drop"];

/// Reads `network = { allow = {...}, deny = {...} }`, every pattern checked.
pub(super) fn network(table: &Table) -> Result<NetworkRules, SchemaError> {
    let mut rules = NetworkRules::default();
    for (key, value) in super::limits::table_keys(table, "network", &NETWORK_KEYS)? {
        let name = format!("network.{key}");
        let list = strings(&name, value)?;
        for pattern in &list {
            check_host_pattern(pattern).map_err(|why| at(pattern, format!("{name}: {why}")))?;
        }
        match key.as_str() {
            "allow" => rules.allow = list,
            _ => rules.deny = list,
        }
    }
    Ok(rules)
}

/// Reads `env = { pass = {...}, drop = {...} }`, every pattern checked.
pub(super) fn env(table: &Table) -> Result<EnvRules, SchemaError> {
    let mut rules = EnvRules::default();
    for (key, value) in super::limits::table_keys(table, "env", &ENV_KEYS)? {
        let name = format!("env.{key}");
        let list = strings(&name, value)?;
        for pattern in &list {
            check_pattern(pattern).map_err(|e| at(pattern, format!("{name}: {e}")))?;
        }
        match key.as_str() {
            "pass" => rules.pass = list,
            _ => rules.drop = list,
        }
    }
    Ok(rules)
}

/// An error found at `pattern`'s line (or at the key's, for an empty pattern).
fn at(pattern: &str, message: String) -> SchemaError {
    let mut err = SchemaError::new(message);
    err.needle = (!pattern.is_empty()).then(|| pattern.to_string());
    err
}

/// A list of strings with no named keys.
fn strings(name: &str, value: Value) -> Result<Vec<String>, SchemaError> {
    let Value::Table(table) = value else {
        return Err(SchemaError::keyed(
            name,
            format!(
                "{name} must be a list of strings like {{\"pypi.org\"}}, not {}",
                type_name(&value)
            ),
        ));
    };
    let mut out = Vec::new();
    for (i, item) in table.sequence_values::<Value>().enumerate() {
        let item = item.map_err(|e| SchemaError::new(e.to_string()))?;
        let Value::String(s) = item else {
            return Err(SchemaError::keyed(
                name,
                format!(
                    "{name}[{}] must be a string, not {}",
                    i + 1,
                    type_name(&item)
                ),
            ));
        };
        out.push(s.to_string_lossy().trim().to_string());
    }
    if table.pairs::<Value, Value>().count() != out.len() {
        return Err(SchemaError::keyed(
            name,
            format!("{name} must be a list of strings (no named keys)"),
        ));
    }
    Ok(out)
}

/// Checks a `network` pattern: an exact host (`pypi.org`), a wildcard (`*.npmjs.org`: its
/// subdomains, not itself), an IP literal (`10.0.0.5`, `::1`, `[::1]`), a CIDR block
/// (`10.0.0.0/8`), each with an optional `:PORT` (`[::1]:8080` for IPv6). The error says what
/// is wrong in words a person fixes a policy with.
pub fn check_host_pattern(pattern: &str) -> Result<(), String> {
    if pattern.is_empty() {
        return Err("an empty pattern matches no host".into());
    }
    if pattern.contains("://") || pattern.contains('/') && !looks_like_cidr(pattern) {
        return Err(format!(
            "`{pattern}` is not a host; write the host alone, such as \"pypi.org\" (no scheme or \
             path)"
        ));
    }
    let (host, port) = split_port(pattern)?;
    if let Some(port) = port {
        match port.parse::<u16>() {
            Ok(p) if p > 0 => {}
            _ => return Err(format!("`{pattern}` has a bad port `{port}` (1 to 65535)")),
        }
    }
    if host == "*" {
        return Err(format!(
            "`{pattern}` would allow every host; run with --network open for that, or name \
             the hosts"
        ));
    }
    if let Some((addr, bits)) = host.split_once('/') {
        let ip: IpAddr = addr.parse().map_err(|_| {
            format!("`{pattern}`: `{addr}` is not an IP address (CIDR blocks are IP/BITS)")
        })?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        return match bits.parse::<u8>() {
            Ok(b) if b <= max => Ok(()),
            _ => Err(format!("`{pattern}`: the prefix length must be 0 to {max}")),
        };
    }
    if host.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    let name = host.strip_prefix("*.").unwrap_or(host);
    if name.contains('*') {
        return Err(format!(
            "`{pattern}`: `*` may only begin a pattern, as in \"*.npmjs.org\""
        ));
    }
    check_hostname(name).map_err(|why| format!("`{pattern}` is not a host name: {why}"))
}

/// `host` and the port after its last `:`, if any (`[v6]:port`; a bare IPv6 literal has none).
fn split_port(pattern: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(rest) = pattern.strip_prefix('[') {
        let Some((addr, after)) = rest.split_once(']') else {
            return Err(format!("`{pattern}` opens a [ it does not close"));
        };
        return match after {
            "" => Ok((addr, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((addr, Some(port))),
                None => Err(format!("`{pattern}`: only :PORT may follow [ADDRESS]")),
            },
        };
    }
    match pattern.matches(':').count() {
        0 => Ok((pattern, None)),
        1 => {
            let (host, port) = pattern.split_once(':').unwrap_or((pattern, ""));
            Ok((host, Some(port)))
        }
        // An IPv6 literal (or block) without brackets: no port.
        _ => Ok((pattern, None)),
    }
}

/// Whether `pattern` is meant as `IP/BITS` (its part before the `/` is written with an
/// address's characters), so a bad address there is reported as such, not as a URL.
fn looks_like_cidr(pattern: &str) -> bool {
    pattern.split_once('/').is_some_and(|(addr, _)| {
        !addr.is_empty()
            && addr
                .chars()
                .all(|c| c.is_ascii_hexdigit() || matches!(c, '.' | ':' | '[' | ']'))
    })
}

/// A DNS name: dot-separated labels of letters, digits, `-` and `_`, none empty or longer than
/// 63, not beginning or ending with `-`.
fn check_hostname(name: &str) -> Result<(), String> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() || name.len() > 253 {
        return Err("it must be 1 to 253 characters".into());
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err("it has an empty label (two dots in a row?)".into());
        }
        if label.len() > 63 {
            return Err(format!("the label `{label}` is longer than 63 characters"));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!("{c:?} cannot be in a host name"));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!("the label `{label}` begins or ends with `-`"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_host_pattern as check;

    #[test]
    fn the_documented_patterns_are_accepted() {
        for p in [
            "pypi.org",
            "*.npmjs.org",
            "registry.npmjs.org:443",
            "localhost",
            "127.0.0.1",
            "127.0.0.1:8080",
            "10.0.0.0/8",
            "169.254.169.254",
            "::1",
            "[::1]",
            "[::1]:8080",
            "fd00:ec2::254",
            "fd00::/8",
            "my_host.internal",
            "example.com.",
        ] {
            assert_eq!(check(p), Ok(()), "{p}");
        }
    }

    #[test]
    fn bad_patterns_say_what_is_wrong() {
        let cases = [
            ("", "empty"),
            ("https://pypi.org", "no scheme"),
            ("pypi.org/simple", "no scheme or path"),
            ("*", "--network open"),
            ("*:443", "--network open"),
            ("pypi.*", "may only begin"),
            ("*.*.org", "may only begin"),
            ("pypi.org:0", "bad port"),
            ("pypi.org:http", "bad port"),
            ("pypi.org:70000", "bad port"),
            ("10.0.0.0/33", "0 to 32"),
            ("300.1.1.1/8", "not an IP address"),
            ("[::1", "does not close"),
            ("[::1]x", "only :PORT"),
            ("a..b", "empty label"),
            ("-a.org", "begins or ends"),
            ("a b.org", "' '"),
        ];
        for (p, want) in cases {
            let e = check(p).expect_err(p);
            assert!(e.contains(want), "{p}: {e}");
        }
    }
}
