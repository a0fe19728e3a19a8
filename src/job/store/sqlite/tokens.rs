//! The dashboard's tokens, sign-in codes and browser sessions in the SQLite store
//! ([`TokenStore`], `crate::token`). Each write is one immediate transaction; every expiry is
//! judged by the store's clock.

use super::{SqliteStore, int, uint};
use crate::job::store::JobStoreError;
use crate::job::store::rows;
use crate::redact::Redacted;
use crate::token::{SecretHash, TokenRecord, TokenStore};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

/// The columns a token is read from, in [`SqliteStore::token_row`]'s order.
const TOKEN: &str = "name, hash, created_ms, revoked_ms, data";

/// A token row's columns: name, hash, created, revoked, JSON.
type Raw = (String, String, i64, Option<i64>, String);

impl SqliteStore {
    /// A token row's columns, as read.
    fn token_columns(r: &rusqlite::Row<'_>) -> rusqlite::Result<Raw> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    }

    /// A token row as its record and the hash it keeps (the columns win over the JSON).
    fn token_row(&self, raw: Raw) -> Result<(TokenRecord, String), JobStoreError> {
        let (name, hash, created, revoked, data) = raw;
        let parsed: TokenRecord = rows::record(&self.path, &name, "tokens", &data)?;
        Ok((
            TokenRecord {
                name,
                created_ms: uint(created),
                revoked_ms: revoked.map(uint),
                ..parsed
            },
            hash,
        ))
    }

    /// The token named `name`, revoked or not.
    fn token_named(
        &self,
        conn: &Connection,
        name: &str,
    ) -> Result<Option<TokenRecord>, JobStoreError> {
        conn.query_row(
            &format!("SELECT {TOKEN} FROM tokens WHERE name = ?1"),
            [name],
            Self::token_columns,
        )
        .optional()
        .map_err(|e| self.db(e))?
        .map(|raw| self.token_row(raw).map(|(t, _)| t))
        .transpose()
    }
}

impl TokenStore for SqliteStore {
    fn add_token(
        &self,
        token: &Redacted<TokenRecord>,
        hash: &SecretHash,
    ) -> Result<TokenRecord, JobStoreError> {
        let now = self.clock.now_ms();
        let stored = TokenRecord {
            created_ms: now,
            revoked_ms: None,
            ..token.get().clone()
        };
        self.write(|tx| {
            let inserted = tx.execute(
                "INSERT INTO tokens (name, hash, created_ms, data) VALUES (?1, ?2, ?3, ?4)",
                params![
                    stored.name,
                    hash.hex(),
                    int(now),
                    rows::to_json(&stored.name, &stored)?
                ],
            );
            match inserted {
                Err(e) if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                    Err(JobStoreError::TokenExists {
                        name: stored.name.clone(),
                    })
                }
                other => other.map(|_| ()).map_err(|e| self.db(e)),
            }
        })?;
        Ok(stored)
    }

    fn tokens(&self) -> Result<Vec<TokenRecord>, JobStoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {TOKEN} FROM tokens ORDER BY created_ms, name"
            ))
            .map_err(|e| self.db(e))?;
        let raw: Vec<Raw> = stmt
            .query_map([], Self::token_columns)
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        raw.into_iter()
            .map(|r| self.token_row(r).map(|(t, _)| t))
            .collect()
    }

    fn revoke_token(&self, name: &str) -> Result<TokenRecord, JobStoreError> {
        let now = int(self.clock.now_ms());
        self.write(|tx| {
            tx.execute(
                "UPDATE tokens SET revoked_ms = ?2 WHERE name = ?1 AND revoked_ms IS NULL",
                params![name, now],
            )
            .map_err(|e| self.db(e))?;
            // Its codes and sessions end in the same write: nothing it let in stays in.
            tx.execute("DELETE FROM login_codes WHERE token = ?1", [name])
                .map_err(|e| self.db(e))?;
            tx.execute("DELETE FROM web_sessions WHERE token = ?1", [name])
                .map_err(|e| self.db(e))?;
            self.token_named(tx, name)?
                .ok_or_else(|| JobStoreError::NoToken {
                    name: name.to_string(),
                })
        })
    }

    fn token_by_hash(
        &self,
        hash: &SecretHash,
    ) -> Result<Option<(TokenRecord, SecretHash)>, JobStoreError> {
        let conn = self.conn();
        let found = conn
            .query_row(
                &format!("SELECT {TOKEN} FROM tokens WHERE hash = ?1 AND revoked_ms IS NULL"),
                [hash.hex()],
                Self::token_columns,
            )
            .optional()
            .map_err(|e| self.db(e))?;
        let Some((t, h)) = found.map(|raw| self.token_row(raw)).transpose()? else {
            return Ok(None);
        };
        Ok(SecretHash::from_hex(&h).map(|h| (t, h)))
    }

    fn add_login_code(
        &self,
        name: &str,
        code: &SecretHash,
        ttl_ms: u64,
    ) -> Result<u64, JobStoreError> {
        let expires = self.clock.now_ms().saturating_add(ttl_ms);
        self.write(|tx| {
            let live = self
                .token_named(tx, name)?
                .is_some_and(|t| t.revoked_ms.is_none());
            if !live {
                return Err(JobStoreError::NoToken {
                    name: name.to_string(),
                });
            }
            tx.execute(
                "INSERT INTO login_codes (hash, token, expires_ms) VALUES (?1, ?2, ?3)",
                params![code.hex(), name, int(expires)],
            )
            .map_err(|e| self.db(e))?;
            Ok(expires)
        })
    }

    fn redeem_login_code(
        &self,
        code: &SecretHash,
        session: &SecretHash,
        ttl_ms: u64,
    ) -> Result<Option<TokenRecord>, JobStoreError> {
        let now = self.clock.now_ms();
        self.write(|tx| {
            // Removed whatever happens next: a code is tried once.
            let found: Option<(String, i64)> = tx
                .query_row(
                    "DELETE FROM login_codes WHERE hash = ?1 RETURNING token, expires_ms",
                    [code.hex()],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .map_err(|e| self.db(e))?;
            let Some((name, expires)) = found else {
                return Ok(None);
            };
            if uint(expires) < now {
                return Ok(None);
            }
            let Some(token) = self
                .token_named(tx, &name)?
                .filter(|t| t.revoked_ms.is_none())
            else {
                return Ok(None);
            };
            tx.execute(
                "INSERT INTO web_sessions (hash, token, created_ms, expires_ms)
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    session.hex(),
                    name,
                    int(now),
                    int(now.saturating_add(ttl_ms))
                ],
            )
            .map_err(|e| self.db(e))?;
            Ok(Some(token))
        })
    }

    fn web_session(&self, session: &SecretHash) -> Result<Option<TokenRecord>, JobStoreError> {
        let now = int(self.clock.now_ms());
        let conn = self.conn();
        conn.query_row(
            "SELECT t.name, t.hash, t.created_ms, t.revoked_ms, t.data
             FROM web_sessions s JOIN tokens t ON t.name = s.token
             WHERE s.hash = ?1 AND s.expires_ms >= ?2 AND t.revoked_ms IS NULL",
            params![session.hex(), now],
            Self::token_columns,
        )
        .optional()
        .map_err(|e| self.db(e))?
        .map(|raw| self.token_row(raw).map(|(t, _)| t))
        .transpose()
    }

    fn end_web_session(&self, session: &SecretHash) -> Result<(), JobStoreError> {
        self.write(|tx| {
            tx.execute("DELETE FROM web_sessions WHERE hash = ?1", [session.hex()])
                .map_err(|e| self.db(e))?;
            Ok(())
        })
    }
}
