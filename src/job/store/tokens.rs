//! What the dashboard's access control keeps in the job store (`crate::token`): the tokens
//! (a name, scopes, who made it; never the token itself, only its SHA-256), the one-time
//! sign-in codes a token's holder redeems in a browser, and the browser sessions those make.
//! They live in the store so that every `oneshot serve` on one PostgreSQL store agrees on
//! them: a token revoked through one is refused by all, at once.
//!
//! Codes and sessions expire by the store's clock (`JobStore::now_ms`), as leases do, so
//! several servers on several machines agree on when.

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
