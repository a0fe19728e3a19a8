//! The dashboard's tokens, sign-in codes and browser sessions in the PostgreSQL store
//! ([`TokenStore`], `crate::token`), every expiry judged by the database's clock, so that
//! several `oneshot serve` on several machines agree on them.

use super::db::Db;
use super::{PostgresStore, is_unique_violation, number};
use crate::job::store::JobStoreError;
use crate::job::store::rows::{self, int};
use crate::redact::Redacted;
use crate::token::{SecretHash, TokenRecord, TokenStore};
use postgres::{GenericClient, Row};

/// The columns a token is read from, in [`PostgresStore::token_row`]'s order.
const TOKEN: &str = "name, hash, created_ms, revoked_ms, data";

impl PostgresStore {
    /// A token row as its record and the hash it keeps (the columns win over the JSON).
    fn token_row(&self, r: &Row) -> Result<(TokenRecord, String), JobStoreError> {
        let (name, hash, created, revoked, data): (String, String, i64, Option<i64>, String) =
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
        let parsed: TokenRecord = rows::record(&self.shown, &name, "tokens", &data)?;
        Ok((
            TokenRecord {
                name,
                created_ms: number(created),
                revoked_ms: revoked.map(number),
                ..parsed
            },
            hash,
        ))
    }

    /// The token named `name`, revoked or not.
    fn token_named(
        &self,
        c: &mut Db<'_, impl GenericClient>,
        name: &str,
    ) -> Result<Option<TokenRecord>, JobStoreError> {
        c.query_opt(
            &format!("SELECT {TOKEN} FROM tokens WHERE name = $1"),
            &[&name],
        )
        .map_err(|e| self.db(&e))?
        .map(|r| self.token_row(&r).map(|(t, _)| t))
        .transpose()
    }
}

impl TokenStore for PostgresStore {
    fn add_token(
        &self,
        token: &Redacted<TokenRecord>,
        hash: &SecretHash,
    ) -> Result<TokenRecord, JobStoreError> {
        self.write(|tx| {
            let now = self.now(tx)?;
            let stored = TokenRecord {
                created_ms: number(now),
                revoked_ms: None,
                ..token.get().clone()
            };
            let inserted = tx.execute(
                "INSERT INTO tokens (name, hash, created_ms, data) VALUES ($1, $2, $3, $4)",
                &[
                    &stored.name,
                    &hash.hex(),
                    &now,
                    &rows::to_json(&stored.name, &stored)?,
                ],
            );
            match inserted {
                Err(e) if is_unique_violation(&e) => Err(JobStoreError::TokenExists {
                    name: stored.name.clone(),
                }),
                Err(e) => Err(self.db(&e)),
                Ok(_) => Ok(stored),
            }
        })
    }

    fn tokens(&self) -> Result<Vec<TokenRecord>, JobStoreError> {
        self.with(|c| {
            c.query(
                &format!("SELECT {TOKEN} FROM tokens ORDER BY created_ms, name"),
                &[],
            )
            .map_err(|e| self.db(&e))?
            .iter()
            .map(|r| self.token_row(r).map(|(t, _)| t))
            .collect()
        })
    }

    fn revoke_token(&self, name: &str) -> Result<TokenRecord, JobStoreError> {
        self.write(|tx| {
            let now = self.now(tx)?;
            tx.execute(
                "UPDATE tokens SET revoked_ms = $2 WHERE name = $1 AND revoked_ms IS NULL",
                &[&name, &now],
            )
            .map_err(|e| self.db(&e))?;
            // Its codes and sessions end in the same transaction: nothing it let in stays in.
            tx.execute("DELETE FROM login_codes WHERE token = $1", &[&name])
                .map_err(|e| self.db(&e))?;
            tx.execute("DELETE FROM web_sessions WHERE token = $1", &[&name])
                .map_err(|e| self.db(&e))?;
            // Open dashboard streams of this token end: `serve` hears the change.
            self.changed(tx, "")?;
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
        self.with(|c| {
            let Some(r) = c
                .query_opt(
                    &format!("SELECT {TOKEN} FROM tokens WHERE hash = $1 AND revoked_ms IS NULL"),
                    &[&hash.hex()],
                )
                .map_err(|e| self.db(&e))?
            else {
                return Ok(None);
            };
            let (t, h) = self.token_row(&r)?;
            Ok(SecretHash::from_hex(&h).map(|h| (t, h)))
        })
    }

    fn add_login_code(
        &self,
        name: &str,
        code: &SecretHash,
        ttl_ms: u64,
    ) -> Result<u64, JobStoreError> {
        self.write(|tx| {
            let now = self.now(tx)?;
            // Locked: a revoke waits for this code to be in, and then removes it.
            let live = tx
                .query_opt(
                    "SELECT 1 FROM tokens WHERE name = $1 AND revoked_ms IS NULL FOR UPDATE",
                    &[&name],
                )
                .map_err(|e| self.db(&e))?
                .is_some();
            if !live {
                return Err(JobStoreError::NoToken {
                    name: name.to_string(),
                });
            }
            let expires = now.saturating_add(int(ttl_ms));
            tx.execute(
                "INSERT INTO login_codes (hash, token, expires_ms) VALUES ($1, $2, $3)",
                &[&code.hex(), &name, &expires],
            )
            .map_err(|e| self.db(&e))?;
            Ok(number(expires))
        })
    }

    fn redeem_login_code(
        &self,
        code: &SecretHash,
        session: &SecretHash,
        ttl_ms: u64,
    ) -> Result<Option<TokenRecord>, JobStoreError> {
        self.write(|tx| {
            let now = self.now(tx)?;
            // Removed whatever happens next: a code is tried once. Two servers redeeming the
            // same code at once: the second `DELETE` waits for the first and finds nothing.
            let Some(r) = tx
                .query_opt(
                    "DELETE FROM login_codes WHERE hash = $1 RETURNING token, expires_ms",
                    &[&code.hex()],
                )
                .map_err(|e| self.db(&e))?
            else {
                return Ok(None);
            };
            let (name, expires): (String, i64) = (r.get(0), r.get(1));
            if expires < now {
                return Ok(None);
            }
            // Locked, so a revoke cannot slip between this check and the session's insert.
            let live = tx
                .query_opt(
                    &format!(
                        "SELECT {TOKEN} FROM tokens WHERE name = $1 AND revoked_ms IS NULL \
                         FOR UPDATE"
                    ),
                    &[&name],
                )
                .map_err(|e| self.db(&e))?;
            let Some(row) = live else {
                return Ok(None);
            };
            let (token, _) = self.token_row(&row)?;
            tx.execute(
                "INSERT INTO web_sessions (hash, token, created_ms, expires_ms)
                 VALUES ($1, $2, $3, $4)",
                &[
                    &session.hex(),
                    &name,
                    &now,
                    &now.saturating_add(int(ttl_ms)),
                ],
            )
            .map_err(|e| self.db(&e))?;
            Ok(Some(token))
        })
    }

    fn web_session(&self, session: &SecretHash) -> Result<Option<TokenRecord>, JobStoreError> {
        self.with(|c| {
            let now = self.now(c)?;
            c.query_opt(
                "SELECT t.name, t.hash, t.created_ms, t.revoked_ms, t.data
                 FROM web_sessions s JOIN tokens t ON t.name = s.token
                 WHERE s.hash = $1 AND s.expires_ms >= $2 AND t.revoked_ms IS NULL",
                &[&session.hex(), &now],
            )
            .map_err(|e| self.db(&e))?
            .map(|r| self.token_row(&r).map(|(t, _)| t))
            .transpose()
        })
    }

    fn end_web_session(&self, session: &SecretHash) -> Result<(), JobStoreError> {
        self.write(|tx| {
            tx.execute(
                "DELETE FROM web_sessions WHERE hash = $1",
                &[&session.hex()],
            )
            .map_err(|e| self.db(&e))?;
            // The browser's open streams end: every `serve` hears the change.
            self.changed(tx, "")
        })
    }
}
