//! Who may do what on the dashboard (`oneshot serve`): named tokens with scopes, one-time
//! sign-in links, and the browser sessions they open — all kept in the job store
//! ([`TokenStore`], which every job store implements), so that every `serve` on one
//! PostgreSQL store agrees on them.
//!
//! A token is a random secret shown once, when it is made (`osk_` and 32 random bytes); the
//! store keeps only its SHA-256 ([`secret`]). An API client sends it as `Authorization: Bearer
//! …`. A browser signs in through a link holding a one-time code (`osl_…`, expiring after
//! [`LOGIN_TTL_MS`] by the store's clock), which opens a browser session (`oss_…`, the cookie,
//! lasting [`SESSION_TTL_MS`]); revoking the token ends its codes and sessions at once.
//!
//! No agent can approve its own work: no token, code or cookie may reach an agent's
//! environment ([`withheld_env`], applied wherever oneshot starts an agent or a check).

pub mod secret;
mod store;

pub use store::{SecretHash, TokenRecord, TokenStore};

use crate::job::store::{JobStore, JobStoreError};

/// How long a sign-in code may wait to be redeemed: 10 minutes, by the store's clock.
pub const LOGIN_TTL_MS: u64 = 10 * 60 * 1000;

/// How long a browser session lasts after sign-in: 12 hours, by the store's clock.
pub const SESSION_TTL_MS: u64 = 12 * 60 * 60 * 1000;

/// The environment variable an API client may keep a token in. oneshot itself never reads
/// it; it is only ever removed from what an agent or a check is given.
pub const TOKEN_ENV: &str = "ONESHOT_TOKEN";

/// Where `oneshot serve` listens unless told otherwise.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8719";

/// What a token may do. `admin` allows everything; `approve` and `operate` each also allow
/// `read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// See the board, the jobs, the inbox.
    Read,
    /// Suspend, resume, cancel, stop, resubmit.
    Operate,
    /// Approve, reject, land.
    Approve,
    /// Everything, and the tokens.
    Admin,
}

impl Scope {
    /// Every scope, in the order `--help` lists them.
    pub const ALL: [Scope; 4] = [Scope::Read, Scope::Operate, Scope::Approve, Scope::Admin];

    /// The scope's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Operate => "operate",
            Scope::Approve => "approve",
            Scope::Admin => "admin",
        }
    }

    /// The scope a word names (any case).
    pub fn parse(word: &str) -> Result<Scope, TokenError> {
        Scope::ALL
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(word.trim()))
            .ok_or_else(|| TokenError::UnknownScope {
                word: word.to_string(),
            })
    }

    /// Whether holding `self` allows what `needed` guards.
    pub fn covers(self, needed: Scope) -> bool {
        self == needed || self == Scope::Admin || needed == Scope::Read
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a request is allowed: the token's name (the actor of everything it does) and its
/// scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The token's name.
    pub name: String,
    /// Its scopes.
    pub scopes: Vec<Scope>,
}

impl Grant {
    /// Whether the grant allows what `needed` guards.
    pub fn allows(&self, needed: Scope) -> bool {
        self.scopes.iter().any(|s| s.covers(needed))
    }

    /// The grant a stored token gives. A scope word this oneshot does not know (a newer
    /// one's) gives nothing.
    pub fn of(record: &TokenRecord) -> Grant {
        Grant {
            name: record.name.clone(),
            scopes: record
                .scopes
                .iter()
                .filter_map(|w| Scope::parse(w).ok())
                .collect(),
        }
    }
}

/// Why a token operation did nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// A name that cannot be a token's.
    #[error(
        "token name {name:?}: use 1 to 64 letters, digits, '.', '_' or '-', starting with a \
         letter or a digit (it names the actor in the audit trail)"
    )]
    BadName {
        /// The name given.
        name: String,
    },
    /// A scope word that is none of the four.
    #[error("unknown scope {word:?}: give read, operate, approve or admin")]
    UnknownScope {
        /// The word given.
        word: String,
    },
    /// No scope given.
    #[error("a token needs at least one --scope: read, operate, approve or admin")]
    NoScope,
    /// The name would not survive the redactor (it looks like a secret).
    #[error(
        "token name {name:?} looks like a secret to the redactor and would be stored masked; \
         choose a plain name"
    )]
    Masked {
        /// The name given.
        name: String,
    },
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] JobStoreError),
    /// No randomness.
    #[error(transparent)]
    Random(#[from] secret::NoRandom),
    /// The record could not go through the redactor.
    #[error("redact the token's record: {0}")]
    Seal(#[from] crate::redact::SealError),
}

/// A token just made: the secret (shown this once, never stored) and its record.
#[derive(Debug, Clone)]
pub struct Created {
    /// The token itself, `osk_…`.
    pub token: String,
    /// The record as stored.
    pub record: TokenRecord,
}

/// A one-time sign-in code just made.
#[derive(Debug, Clone)]
pub struct LoginCode {
    /// The code, `osl_…`: the last part of the sign-in link.
    pub code: String,
    /// When it expires (ms since the epoch, the store's clock).
    pub expires_ms: u64,
}

impl LoginCode {
    /// The sign-in link on a server at `base` (`http://127.0.0.1:8719`).
    pub fn link(&self, base: &str) -> String {
        format!("{}/login/{}", base.trim_end_matches('/'), self.code)
    }
}

/// Whether `name` may name a token.
fn check_name(name: &str) -> Result<(), TokenError> {
    let ok = (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(TokenError::BadName {
            name: name.to_string(),
        })
    }
}

/// Makes token `name` with `scopes`, made by `by` (the actor): its secret is returned once and
/// only its hash is stored.
pub fn create(
    store: &dyn JobStore,
    name: &str,
    scopes: &[Scope],
    by: &str,
) -> Result<Created, TokenError> {
    check_name(name)?;
    if scopes.is_empty() {
        return Err(TokenError::NoScope);
    }
    let mut words: Vec<Scope> = scopes.to_vec();
    words.sort();
    words.dedup();
    let record = TokenRecord {
        name: name.to_string(),
        scopes: words.iter().map(|s| s.as_str().to_string()).collect(),
        created_ms: 0,
        created_by: by.to_string(),
        revoked_ms: None,
    };
    let sealed = crate::policy::redactor(None).seal(&record)?;
    if sealed.get().name != name {
        return Err(TokenError::Masked {
            name: name.to_string(),
        });
    }
    let token = secret::fresh(secret::TOKEN_PREFIX)?;
    let record = store.add_token(&sealed, &secret::hash(&token))?;
    Ok(Created { token, record })
}

/// Every token, revoked ones too, oldest first.
pub fn list(store: &dyn JobStore) -> Result<Vec<TokenRecord>, TokenError> {
    Ok(store.tokens()?)
}

/// Revokes token `name`: it, its sign-in codes and its browser sessions stop working at once.
pub fn revoke(store: &dyn JobStore, name: &str) -> Result<TokenRecord, TokenError> {
    Ok(store.revoke_token(name)?)
}

/// The grant of a bearer token, or `None` when it is malformed, unknown or revoked.
pub fn check(store: &dyn JobStore, bearer: &str) -> Result<Option<Grant>, TokenError> {
    let bearer = bearer.trim();
    if !secret::well_formed(bearer, secret::TOKEN_PREFIX) {
        return Ok(None);
    }
    // Found by its hash; the hash compared again in constant time, so no comparison this
    // process makes depends on where a guess differs.
    Ok(store
        .token_by_hash(&secret::hash(bearer))?
        .filter(|(_, stored)| secret::matches(bearer, stored))
        .map(|(t, _)| Grant::of(&t)))
}

/// A new one-time sign-in code for token `name`, valid for [`LOGIN_TTL_MS`].
pub fn login_code(store: &dyn JobStore, name: &str) -> Result<LoginCode, TokenError> {
    let code = secret::fresh(secret::CODE_PREFIX)?;
    let expires_ms = store.add_login_code(name, &secret::hash(&code), LOGIN_TTL_MS)?;
    Ok(LoginCode { code, expires_ms })
}

/// Redeems a sign-in code, once: a new browser session's secret (the cookie's value) and the
/// grant it carries; `None` when the code is malformed, unknown, used, expired or its token
/// revoked.
pub fn redeem(store: &dyn JobStore, code: &str) -> Result<Option<(String, Grant)>, TokenError> {
    if !secret::well_formed(code, secret::CODE_PREFIX) {
        return Ok(None);
    }
    let session = secret::fresh(secret::SESSION_PREFIX)?;
    let found =
        store.redeem_login_code(&secret::hash(code), &secret::hash(&session), SESSION_TTL_MS)?;
    Ok(found.map(|t| (session, Grant::of(&t))))
}

/// The grant of a browser session's cookie, or `None` when it is malformed, unknown,
/// expired, or its token revoked.
pub fn session(store: &dyn JobStore, cookie: &str) -> Result<Option<Grant>, TokenError> {
    if !secret::well_formed(cookie, secret::SESSION_PREFIX) {
        return Ok(None);
    }
    Ok(store
        .web_session(&secret::hash(cookie))?
        .map(|t| Grant::of(&t)))
}

/// Ends a browser session (signing out).
pub fn logout(store: &dyn JobStore, cookie: &str) -> Result<(), TokenError> {
    if secret::well_formed(cookie, secret::SESSION_PREFIX) {
        store.end_web_session(&secret::hash(cookie))?;
    }
    Ok(())
}

/// The names of the variables of this process's environment that must not reach an agent
/// or a check: [`TOKEN_ENV`], and any whose value holds a oneshot secret (a token kept under
/// another name, a sign-in link). An agent that could read one could approve its own work.
pub fn withheld_env() -> Vec<std::ffi::OsString> {
    withheld_in(std::env::vars_os())
}

/// [`withheld_env`] over `vars`.
pub fn withheld_in(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<std::ffi::OsString> {
    vars.filter(|(name, value)| name == TOKEN_ENV || holds_secret(&value.to_string_lossy()))
        .map(|(name, _)| name)
        .collect()
}

/// Whether `text` holds a oneshot secret (a kind prefix followed by a secret's body).
pub fn holds_secret(text: &str) -> bool {
    secret::PREFIXES.iter().any(|prefix| {
        text.match_indices(prefix).any(|(at, _)| {
            let body = &text[at + prefix.len()..];
            body.len() >= 43
                && body
                    .bytes()
                    .take(43)
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_allows_everything_and_operate_and_approve_each_allow_read() {
        let g = |s: &[Scope]| Grant {
            name: "t".into(),
            scopes: s.to_vec(),
        };
        for needed in Scope::ALL {
            assert!(g(&[Scope::Admin]).allows(needed), "{needed}");
        }
        let read = g(&[Scope::Read]);
        assert!(read.allows(Scope::Read));
        assert!(!read.allows(Scope::Operate) && !read.allows(Scope::Approve));
        let op = g(&[Scope::Operate]);
        assert!(op.allows(Scope::Read) && op.allows(Scope::Operate));
        assert!(!op.allows(Scope::Approve) && !op.allows(Scope::Admin));
        let ap = g(&[Scope::Approve]);
        assert!(ap.allows(Scope::Read) && ap.allows(Scope::Approve));
        assert!(!ap.allows(Scope::Operate) && !ap.allows(Scope::Admin));
        assert!(!g(&[]).allows(Scope::Read));
        assert!(Scope::parse("APPROVE").is_ok());
        assert!(Scope::parse("write").is_err());
    }

    #[test]
    fn a_secret_in_any_variable_is_withheld_and_plain_ones_are_not() {
        let token = secret::fresh(secret::TOKEN_PREFIX).unwrap();
        let link = format!(
            "http://127.0.0.1:8719/login/{}",
            secret::fresh("osl_").unwrap()
        );
        let vars = [
            ("ONESHOT_TOKEN", "anything"),
            ("MY_DASH", token.as_str()),
            ("LINK", link.as_str()),
            ("PATH", "/usr/bin:/bin"),
            ("NOTE", "osk_ is our prefix"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()));
        let withheld: Vec<String> = withheld_in(vars)
            .into_iter()
            .map(|n| n.into_string().unwrap())
            .collect();
        assert_eq!(withheld, ["ONESHOT_TOKEN", "MY_DASH", "LINK"]);
    }
}
