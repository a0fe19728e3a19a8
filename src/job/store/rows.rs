//! Rows to records and back, for every store: a job's JSON with its authoritative `state`
//! column, the columns `list` reads, and the legacy state names migrated on read. `path` is
//! where the store is, as its errors name it (a file, or a database URL without its password).

use crate::job::record::{Job, Risk};
use crate::job::store::JobStoreError;
use crate::job::{JobState, Migration, migrate};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;

/// The widest title `list` keeps, in characters.
const TITLE_CHARS: usize = 80;

/// The first line of a task, cut to [`TITLE_CHARS`] (with `…` when cut).
pub(crate) fn title(task: &str) -> String {
    let line = task.trim().lines().next().unwrap_or("").trim();
    if line.chars().count() <= TITLE_CHARS {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(TITLE_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// The job's JSON. A `Job` always serializes; the error arm is for form's sake.
pub(crate) fn to_json<T: Serialize>(id: &str, value: &T) -> Result<String, JobStoreError> {
    serde_json::to_string(value).map_err(|e| JobStoreError::Corrupt {
        id: id.to_string(),
        message: format!("it cannot be written as JSON ({e}); nothing was written"),
    })
}

/// The message of a row that does not parse: which table, what is wrong, what to do.
fn corrupt(path: &Path, id: &str, table: &str, what: impl std::fmt::Display) -> JobStoreError {
    JobStoreError::Corrupt {
        id: id.to_string(),
        message: format!(
            "{what} (in table {table} of {path}); nothing was changed; restore the store from a \
             backup, or fix or delete that row (the sqlite3 shell for a file, psql for \
             PostgreSQL)",
            path = path.display()
        ),
    }
}

/// One JSON record of `table` about job `id` (a transition, an artifact version, an audit
/// entry).
pub(crate) fn record<T: DeserializeOwned>(
    path: &Path,
    id: &str,
    table: &str,
    data: &str,
) -> Result<T, JobStoreError> {
    serde_json::from_str(data).map_err(|e| corrupt(path, id, table, e))
}

/// A `state` column read: the state, and the migration when it held a legacy name. `stuck`
/// says whether no runner holds the job (for a legacy RUNNING).
pub(crate) fn state(
    path: &Path,
    id: &str,
    name: &str,
    stuck: bool,
) -> Result<(JobState, Option<Migration>), JobStoreError> {
    migrate(name, stuck).map_err(|e| corrupt(path, id, "jobs", e))
}

/// A `jobs` row's job: its JSON with the `state` column's state (already migrated) put in,
/// since the column is authoritative and the JSON of a legacy row may hold a legacy name.
pub(crate) fn job(
    path: &Path,
    id: &str,
    state: JobState,
    data: &str,
) -> Result<Job, JobStoreError> {
    let mut value: serde_json::Value =
        serde_json::from_str(data).map_err(|e| corrupt(path, id, "jobs", e))?;
    let Some(fields) = value.as_object_mut() else {
        return Err(corrupt(
            path,
            id,
            "jobs",
            "the data column is not a JSON object",
        ));
    };
    fields.insert("state".into(), state.as_str().into());
    let job: Job = serde_json::from_value(value).map_err(|e| corrupt(path, id, "jobs", e))?;
    if job.id != id {
        return Err(corrupt(
            path,
            id,
            "jobs",
            format!("the data column names another job ({})", job.id),
        ));
    }
    Ok(job)
}

/// A legacy row's job as its migration leaves it (its reason says so), and the audit entry
/// that records the migration (actor `oneshot`; the transition matrix has no trigger for it),
/// dated at the job's last change: a store reads no clock for it.
pub(crate) fn migrated(job: &mut Job, migration: &Migration) -> crate::job::record::AuditEntry {
    job.reason = Some(crate::job::JobReason::Migrated {
        from: migration.from.to_string(),
        why: migration.why.to_string(),
    });
    let mut metadata = serde_json::Map::new();
    metadata.insert("from".into(), migration.from.clone().into());
    metadata.insert("to".into(), migration.to.as_str().into());
    metadata.insert("why".into(), migration.why.clone().into());
    crate::job::record::AuditEntry {
        seq: 0,
        at_ms: job.updated_ms,
        actor: "oneshot".into(),
        entity_type: "job".into(),
        entity_id: job.id.clone(),
        action: crate::job::record::AuditAction::Migrate,
        metadata,
    }
}

/// The one job an id prefix names, from the ids that start with it (the first few):
/// [`JobStoreError::NotFound`] for none, [`JobStoreError::Ambiguous`] for several.
pub(crate) fn one_of(id: &str, matches: Vec<String>) -> Result<String, JobStoreError> {
    match matches.len() {
        0 => Err(JobStoreError::NotFound { id: id.to_string() }),
        1 => Ok(matches.into_iter().next().unwrap_or_default()),
        _ => Err(JobStoreError::Ambiguous {
            id: id.to_string(),
            matches,
        }),
    }
}

/// A `risk` column read.
pub(crate) fn risk(path: &Path, id: &str, name: &str) -> Result<Risk, JobStoreError> {
    name.parse()
        .map_err(|e: String| corrupt(path, id, "jobs", e))
}

/// A u64 as SQLite stores it (i64). Times and tokens stay far below 2^63; saturating keeps an
/// absurd ttl from wrapping into the past.
pub(crate) fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// An INTEGER column as u64: negative values (written by hand) read as 0.
pub(crate) fn uint(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
