//! What the dashboard's access control keeps in the job store ([`super`]): the tokens
//! (a name, scopes, who made it; never the token itself, only its SHA-256), the one-time
//! sign-in codes a token's holder redeems in a browser, and the browser sessions those make.
//! They live in the store so that every `oneshot serve` on one PostgreSQL store agrees on
//! them: a token revoked through one is refused by all, at once.
//!
//! Codes and sessions expire by the store's clock (`Jobs::now_ms`), as leases do, so
//! several servers on several machines agree on when. The trait is the dashboard's, here; each
//! job store implements it in its own file (`job/store/sqlite/tokens.rs`,
//! `job/store/postgres/tokens.rs`).

use crate::job::store::JobStoreError;
use crate::redact::Redacted;
use serde::{Deserialize, Serialize};

/// A token as the store keeps it (the secret itself is never stored: only its [`SecretHash`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Its name: unique in the store, the actor the audit trail names for what it does.
    pub name: String,
    /// What it may do (`read`, `operate`, `approve`, `admin`), as words.
    pub scopes: Vec<String>,
    /// When it was made (ms since the epoch, the store's clock); assigned by the store.
    #[serde(default)]
    pub created_ms: u64,
    /// Who made it (`$ONESHOT_ACTOR`, else the OS user).
    pub created_by: String,
    /// When it was revoked, if it was (the store's clock); assigned by the store.
    #[serde(default)]
    pub revoked_ms: Option<u64>,
}

/// The SHA-256 of a secret (a token, a sign-in code, a browser session's cookie): what the
/// store keeps and looks a secret up by. A hash of 32 random bytes tells nothing about them.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretHash(pub [u8; 32]);

impl SecretHash {
    /// Lower-case hex, as the store's columns hold it.
    pub fn hex(&self) -> String {
        use std::fmt::Write;
        self.0.iter().fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }

    /// A hash read back from its [`SecretHash::hex`]; `None` when it is not 64 hex digits.
    pub fn from_hex(text: &str) -> Option<SecretHash> {
        if text.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(SecretHash(out))
    }
}

impl std::fmt::Debug for SecretHash {
    /// Only a prefix: enough to tell two apart in a test's failure.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretHash({}…)", &self.hex()[..8])
    }
}

/// The dashboard's tokens, sign-in codes and browser sessions, kept in the job store so that
/// every `oneshot serve` on one store agrees on them. Every expiry is judged by the store's
/// clock ([`crate::job::store::Jobs::now_ms`]).
pub trait TokenStore: Send + Sync {
    /// Adds a token: its record (`created_ms` is the store's now, `revoked_ms` none) and the
    /// hash of its secret. [`JobStoreError::TokenExists`] when the name is taken, revoked or
    /// not. Returns the record as stored.
    fn add_token(
        &self,
        token: &Redacted<TokenRecord>,
        hash: &SecretHash,
    ) -> Result<TokenRecord, JobStoreError>;

    /// Every token, revoked ones too, oldest first.
    fn tokens(&self) -> Result<Vec<TokenRecord>, JobStoreError>;

    /// Revokes token `name` at the store's now, and ends its sign-in codes and browser
    /// sessions in the same write. Revoking a revoked token changes nothing. Returns the
    /// record; [`JobStoreError::NoToken`] when no token has the name.
    fn revoke_token(&self, name: &str) -> Result<TokenRecord, JobStoreError>;

    /// The token that is not revoked whose secret hashes to `hash`, with the hash as stored
    /// (for the caller's constant-time comparison).
    fn token_by_hash(
        &self,
        hash: &SecretHash,
    ) -> Result<Option<(TokenRecord, SecretHash)>, JobStoreError>;

    /// Keeps a one-time sign-in code (its hash) for token `name`, valid `ttl_ms` from the
    /// store's now; returns when it expires. [`JobStoreError::NoToken`] when the token does
    /// not exist or is revoked.
    fn add_login_code(
        &self,
        name: &str,
        code: &SecretHash,
        ttl_ms: u64,
    ) -> Result<u64, JobStoreError>;

    /// Redeems a sign-in code, once: in one write, the code is removed and — when it had not
    /// expired by the store's clock and its token is not revoked — a browser session `session`
    /// of that token is kept for `ttl_ms` from the store's now. The token, or `None` when the
    /// code is unknown, used already, expired, or its token revoked.
    fn redeem_login_code(
        &self,
        code: &SecretHash,
        session: &SecretHash,
        ttl_ms: u64,
    ) -> Result<Option<TokenRecord>, JobStoreError>;

    /// The token of a browser session that has not expired by the store's clock and whose
    /// token is not revoked.
    fn web_session(&self, session: &SecretHash) -> Result<Option<TokenRecord>, JobStoreError>;

    /// Ends a browser session (signing out); one that is not there is no error.
    fn end_web_session(&self, session: &SecretHash) -> Result<(), JobStoreError>;
}
