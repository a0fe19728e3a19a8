//! The secrets the dashboard hands out — tokens, sign-in codes, browser sessions' cookies —
//! made, hashed and compared. Each is a kind prefix and 32 random bytes from the OS, written
//! base64url without padding (`osk_…`): the prefix tells a reader (and a secret scanner) what
//! it is; the store keeps only its SHA-256.

use crate::job::store::SecretHash;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The kind prefix of an API token.
pub const TOKEN_PREFIX: &str = "osk_";
/// The kind prefix of a one-time sign-in code.
pub const CODE_PREFIX: &str = "osl_";
/// The kind prefix of a browser session's cookie.
pub const SESSION_PREFIX: &str = "oss_";

/// Every prefix a oneshot secret starts with (what an agent's environment is searched for).
pub const PREFIXES: [&str; 3] = [TOKEN_PREFIX, CODE_PREFIX, SESSION_PREFIX];

/// How many random bytes a secret carries.
const RANDOM_BYTES: usize = 32;

/// The OS gave no random bytes (no `getrandom(2)`, no `/dev/urandom`).
#[derive(Debug, thiserror::Error)]
#[error("the operating system gave no random bytes for a secret ({0}); nothing was made")]
pub struct NoRandom(String);

/// A new secret of the kind `prefix` names: the prefix, then 32 random bytes in base64url.
pub fn fresh(prefix: &str) -> Result<String, NoRandom> {
    let mut bytes = [0u8; RANDOM_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| NoRandom(e.to_string()))?;
    Ok(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// The SHA-256 of `secret`, what the store keeps and looks it up by.
pub fn hash(secret: &str) -> SecretHash {
    SecretHash(Sha256::digest(secret.as_bytes()).into())
}

/// Whether `secret` hashes to `stored`, compared in constant time: how long the comparison
/// takes says nothing about where the two differ.
pub fn matches(secret: &str, stored: &SecretHash) -> bool {
    hash(secret).0.ct_eq(&stored.0).into()
}

/// Whether `text` has the shape of a secret of the kind `prefix` names (the prefix and 43
/// base64url characters): anything else is refused before the store is asked.
pub fn well_formed(text: &str, prefix: &str) -> bool {
    text.strip_prefix(prefix).is_some_and(|body| {
        body.len() == 43
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_secret_is_its_prefix_and_32_random_bytes_and_only_its_hash_matches() {
        let a = fresh(TOKEN_PREFIX).unwrap();
        let b = fresh(TOKEN_PREFIX).unwrap();
        assert_ne!(a, b);
        assert!(well_formed(&a, TOKEN_PREFIX), "{a}");
        assert!(!well_formed(&a, CODE_PREFIX));
        let body = URL_SAFE_NO_PAD.decode(&a[TOKEN_PREFIX.len()..]).unwrap();
        assert_eq!(body.len(), 32);
        assert!(matches(&a, &hash(&a)));
        assert!(!matches(&b, &hash(&a)));
        assert_eq!(SecretHash::from_hex(&hash(&a).hex()), Some(hash(&a)));
        assert!(!well_formed("osk_short", TOKEN_PREFIX));
        assert!(!well_formed(&format!("{a}!"), TOKEN_PREFIX));
    }
}
