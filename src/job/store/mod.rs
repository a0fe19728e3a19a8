//! Where jobs live: the [`JobStore`] every caller holds, and its embedded default
//! [`SqliteStore`] (and, with the `postgres` feature, the fleet's `PostgresStore`).
//!
//! A store is cut by domain, one trait each: the jobs and their records ([`Jobs`]), a runner's
//! claims and the writes that name its lease ([`Leases`]), the sessions a runner ships
//! ([`Shipments`]), the runners' heartbeats ([`Runners`]), the notifications sent
//! ([`Notifications`]), the wake-ups ([`Signals`]) and the dashboard's tokens
//! ([`crate::token::TokenStore`]). [`JobStore`] is all of them at once.
//!
//! The contract is shaped for a store shared by many runners: a runner claims a
//! step and gets a [`Lease`] with a fencing token, and the store refuses a write under a
//! stale one ([`Leases`]). A PostgreSQL store follows the same contract: `claim` is a `SELECT … FOR UPDATE
//! SKIP LOCKED` plus an `UPDATE` of the lease columns, the fencing token a column incremented
//! by each claim, every runner write an `UPDATE … WHERE fence = $token`. The rules both
//! backends apply the same way are in one place (`rules.rs`).

mod clock;
mod error;
mod jobs;
mod leases;
mod location;
mod notifications;
mod open;
#[cfg(feature = "postgres")]
mod postgres;
pub(crate) mod rows;
pub(crate) mod rules;
mod runners;
mod sessions;
mod signals;
mod sqlite;
#[cfg(test)]
mod tests;
pub(crate) mod work;

pub use crate::token::{SecretHash, TokenRecord, TokenStore};
pub use clock::{ManualClock, StoreClock, SystemClock};
pub use error::{JobStoreError, StoreCause};
pub use jobs::{Decision, JobSummary, Jobs, ListFilter};
pub use leases::{Claim, Lease, Leases};
pub use location::{NO_POSTGRES, PgUrl, StoreLocation};
pub use notifications::{NotificationRecord, Notifications, NotifyOutcome, NotifyStatus};
pub use open::open;
#[cfg(feature = "postgres")]
pub use postgres::{Migrated, PostgresStore};
pub use runners::{RunnerBeat, RunnerRow, RunnerWait, Runners, pending_wait};
pub use sessions::{SessionEntry, SessionJournal, Shipments};
pub use signals::Signals;
pub use sqlite::SqliteStore;

/// The store of jobs, as every caller holds it (`Arc<dyn JobStore>`: a runner, a human's
/// command, a dashboard): every domain trait at once. Implementations are shared by threads
/// and processes; every method is one atomic operation.
///
/// **Why a union of traits, not accessors** (`store.jobs()`, `store.runners()`, … each
/// returning `&dyn Jobs` and so on): callers stay as they were. A method called on a
/// `dyn JobStore` (or on a `S: JobStore`) finds the supertraits' methods without importing
/// them, so `store.claim(…)` and `store.tokens()` read the same as before the cut, and a
/// caller with a concrete store (`SqliteStore` in a test) imports [`prelude`]. Accessors would
/// have put a hop in every one of the hundreds of calls, and each backend would still have
/// needed an accessor per domain returning `self` — forwarding again, under another name. A
/// backend implements each domain trait in its own file; the blanket impl below makes it a
/// `JobStore`, so there is nothing to forward. A function that needs one domain only may take
/// that trait (`&dyn Runners`); a `&dyn JobStore` converts to it (trait upcasting).
pub trait JobStore:
    Jobs + Leases + Shipments + Runners + Notifications + Signals + TokenStore
{
}

impl<T> JobStore for T where
    T: Jobs + Leases + Shipments + Runners + Notifications + Signals + TokenStore + ?Sized
{
}

/// Every store trait, to bring their methods into scope where a concrete store
/// (`SqliteStore`, `PostgresStore`) is called: `use oneshot::job::store::prelude::*;`.
/// (On a `dyn JobStore` or a `S: JobStore` they are in scope already.)
pub mod prelude {
    pub use super::{JobStore, Jobs, Leases, Notifications, Runners, Shipments, Signals};
    pub use crate::token::TokenStore;
}
