//! A connection (or a transaction on it) with the statements prepared on it: each statement
//! the store runs is prepared once per connection and reused — a prepared statement runs in
//! one round trip, an unprepared one costs a second to prepare it every time.

use postgres::types::ToSql;
use postgres::{GenericClient, Row, Statement};
use std::collections::HashMap;

/// The statements prepared on one connection, by their text. A statement belongs to its
/// connection: a new connection starts with none.
pub(super) type Prepared = HashMap<String, Statement>;

/// `c` (a client, or a transaction on it) with its connection's prepared statements.
pub(super) struct Db<'a, C> {
    c: &'a mut C,
    prepared: &'a mut Prepared,
}

impl<'a, C: GenericClient> Db<'a, C> {
    pub(super) fn new(c: &'a mut C, prepared: &'a mut Prepared) -> Self {
        Db { c, prepared }
    }

    /// The client itself, for what takes one (the schema's checks).
    pub(super) fn client(&mut self) -> &mut C {
        self.c
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.c.prepare(sql)?;
        self.prepared.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    pub(super) fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        let s = self.statement(sql)?;
        self.c.query(&s, params)
    }

    pub(super) fn query_one(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, postgres::Error> {
        let s = self.statement(sql)?;
        self.c.query_one(&s, params)
    }

    pub(super) fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let s = self.statement(sql)?;
        self.c.query_opt(&s, params)
    }

    pub(super) fn execute(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        let s = self.statement(sql)?;
        self.c.execute(&s, params)
    }

    /// A statement without parameters, as is (`NOTIFY`).
    pub(super) fn batch_execute(&mut self, sql: &str) -> Result<(), postgres::Error> {
        self.c.batch_execute(sql)
    }
}
