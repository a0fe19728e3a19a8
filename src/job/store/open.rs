//! The front door to a job store: whatever [`StoreLocation`] names — a SQLite file or a
//! PostgreSQL database — opened as the one [`JobStore`] every caller (a human's verb, a runner,
//! a dashboard) works with, so none of them needs to know which it is.

use super::{JobStore, JobStoreError, SqliteStore, StoreLocation};
use std::sync::Arc;

/// Opens the store at `location`. A SQLite file is created (with its directory and tables)
/// when missing and migrates itself; a PostgreSQL database must hold this build's schema —
/// one that does not is refused with the command to run (`oneshot store migrate`), as is a
/// database that cannot be reached, each error naming the URL with its password masked. A
/// build without the `postgres` feature refuses a database, saying so.
///
/// ```
/// use oneshot::job::store::{ListFilter, StoreLocation};
/// let dir = tempfile::tempdir().unwrap();
/// let at = StoreLocation::parse("jobs.db", dir.path()).unwrap();
/// let store = oneshot::job::store::open(&at).unwrap();
/// assert!(store.list(&ListFilter::default()).unwrap().is_empty());
/// ```
pub fn open(location: &StoreLocation) -> Result<Arc<dyn JobStore>, JobStoreError> {
    Ok(match location {
        StoreLocation::File(path) => Arc::new(SqliteStore::open(path)?),
        #[cfg(feature = "postgres")]
        StoreLocation::Postgres(url) => Arc::new(super::PostgresStore::connect(url)?),
        // Unreachable in practice: such a build's `PgUrl::parse` refuses every URL already.
        #[cfg(not(feature = "postgres"))]
        StoreLocation::Postgres(url) => {
            return Err(JobStoreError::Db {
                path: std::path::PathBuf::from(url.shown()),
                message: super::location::NO_POSTGRES.to_string(),
                source: None,
            });
        }
    })
}
