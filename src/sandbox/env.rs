//! The environment an agent is given: what oneshot was started with, less the credentials.
//!
//! Today's hazard: a `GITHUB_TOKEN` exported for oneshot's own use reached every worker, and so
//! did every cloud key in the user's shell. [`filter`] drops variables whose names look like
//! credentials ([`DEFAULT_DROP`]) and oneshot's own secrets, and lets a policy's
//! `env = { pass = {...}, drop = {...} }` ([`EnvRules`]) decide the rest.
//!
//! # The anchor: Codex's `shell_environment_policy`
//!
//! Codex builds a tool's environment in steps: start from `inherit` (`all`, `core` or `none`),
//! drop its default excludes (`*KEY*`, `*SECRET*`, `*TOKEN*`, case-insensitive) unless
//! `ignore_default_excludes`, drop `exclude`, add `set`, then keep only `include_only` if given.
//! What we took: start from the whole environment (`inherit = "all"`, because real work needs
//! the user's `PATH`, proxies, toolchain variables and locale), glob patterns on names with `*`
//! as the only wildcard, default credential excludes that are on unless the policy says
//! otherwise, and a policy list of names to drop. What we changed:
//! - The defaults are narrower where Codex's catch real work (`*KEY*` would drop `KEYMAP`-like
//!   names; we drop `*_KEY` and `*_KEY_*`), and wider where credentials hide under other names
//!   (`*PASSWORD*`, `*CREDENTIAL*`, `SSH_AUTH_SOCK`, cloud variables, oneshot's own token).
//! - Instead of one switch that turns every default off (`ignore_default_excludes`), `pass`
//!   lets one name through at a time, so passing `NPM_TOKEN` does not also pass `AWS_*`.
//! - No `set`: the variables an agent needs from oneshot (its placeholder key, the proxy
//!   variables) are set by the caller and kept through `keep`. No `include_only` either (yet):
//!   `drop` wins over `pass`, so `drop = {"*"}` drops everything but `keep`; a pure allowlist
//!   would need a third list.
//! - A policy's patterns are case-sensitive (as Linux names are); the defaults match without
//!   regard to case, since a credential is one whether it is spelt `GITHUB_TOKEN` or
//!   `npm_config__authToken`.

use std::ffi::{OsStr, OsString};

/// The policy's `env` table: glob patterns on variable names (case-sensitive, `*` matches any
/// run of characters). `drop` wins over `pass`; `pass` wins over [`DEFAULT_DROP`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvRules {
    /// Names let through even when a default would drop them (`NPM_TOKEN`, `GH_*`).
    pub pass: Vec<String>,
    /// Names never given to an agent, even when `pass` names them too.
    pub drop: Vec<String>,
}

/// What [`filter`] decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filtered {
    /// The variables the agent gets, in the order they came.
    pub kept: Vec<(OsString, OsString)>,
    /// The names left out (never their values), sorted and without repeats: what `show` lists.
    pub dropped: Vec<String>,
}

/// The names dropped unless a policy's `pass` names them, matched without regard to case.
///
/// `AWS_PROFILE`, `AWS_REGION`, `AWS_CONFIG_FILE` and `CLOUDSDK_CONFIG` are deliberately not
/// here: they name which profile or file to use, not a secret, and tools fail in confusing ways
/// without them. What they point at is a file the sandbox, not the environment, must guard.
pub const DEFAULT_DROP: &[&str] = &[
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*_KEY",
    "*_KEY_*",
    "*APIKEY*",
    "*CREDENTIAL*",
    // Cloud and registry credentials whose names the patterns above miss (the AWS key id,
    // session token and Google's credential file are caught by `*_KEY_*`, `*TOKEN*` and
    // `*CREDENTIAL*`; listed again so the list says what it covers).
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AZURE_CLIENT_SECRET",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_STORAGE_CONNECTION_STRING",
    "DOCKER_AUTH_CONFIG",
    "*_AUTH",
    "KRB5CCNAME",
    // Agents that sign or authenticate for the user: a socket is as good as the key.
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
];

/// A pattern a policy may not use, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvPatternError {
    /// `""`.
    #[error("an empty pattern matches no variable")]
    Empty,
    /// A character no variable name a shell can set holds (`=`, a space, a control character).
    #[error(
        "`{pattern}` holds {found:?}, which no variable name can; names are like GITHUB_TOKEN or NPM_*"
    )]
    BadChar {
        /// The pattern.
        pattern: String,
        /// The first offending character.
        found: char,
    },
}

/// Checks one `pass` or `drop` pattern, for the policy's load.
pub fn check_pattern(pattern: &str) -> Result<(), EnvPatternError> {
    if pattern.is_empty() {
        return Err(EnvPatternError::Empty);
    }
    match pattern
        .chars()
        .find(|c| *c == '=' || c.is_whitespace() || c.is_control())
    {
        Some(found) => Err(EnvPatternError::BadChar {
            pattern: pattern.to_string(),
            found,
        }),
        None => Ok(()),
    }
}

/// The key variables an agent's command line names as Codex's `env_key="NAME"` (a custom
/// model provider's): kept in its environment, as its own credentials are.
pub fn named_by_argv<'a>(words: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    words
        .into_iter()
        .filter_map(|word| word.split("env_key=").nth(1))
        .map(|rest| {
            rest.trim_matches('"')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// The environment for an agent: `vars` less what the rules drop. For each name, in order:
/// `keep` (names the caller sets itself, such as the agent's placeholder key) stays; oneshot's
/// own secrets (`ONESHOT_TOKEN`, or any value holding a oneshot secret: see
/// [`crate::token::withheld_in`]) go, whatever the policy says; then the policy's `drop`, its
/// `pass`, and [`DEFAULT_DROP`]; anything else stays.
pub fn filter(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    rules: &EnvRules,
    keep: &[&str],
) -> Filtered {
    let mut out = Filtered::default();
    for (name, value) in vars {
        if decide(&name, &value, rules, keep) {
            out.kept.push((name, value));
        } else {
            out.dropped.push(name.to_string_lossy().into_owned());
        }
    }
    out.dropped.sort_unstable();
    out.dropped.dedup();
    out
}

/// Whether the variable stays.
fn decide(name: &OsStr, value: &OsStr, rules: &EnvRules, keep: &[&str]) -> bool {
    let text = name.to_string_lossy();
    if keep.iter().any(|k| *k == text) {
        return true;
    }
    if text == crate::token::TOKEN_ENV || crate::token::holds_secret(&value.to_string_lossy()) {
        return false;
    }
    if rules.drop.iter().any(|p| glob(p, &text)) {
        return false;
    }
    if rules.pass.iter().any(|p| glob(p, &text)) {
        return true;
    }
    let upper = text.to_ascii_uppercase();
    !DEFAULT_DROP.iter().any(|p| glob(p, &upper))
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters (none included)
/// and every other character only itself.
pub fn glob(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    // The classic linear matcher: on a mismatch, go back to the last `*` and let it eat one
    // more byte. Bytes, not chars: `*` is ASCII, so a match never splits a character wrongly.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ni));
            pi += 1;
        } else if pi < p.len() && p[pi] == n[ni] {
            pi += 1;
            ni += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|b| *b == b'*')
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
