//! Where sessions live: `<state-dir>/sessions/<id>/`.

use super::lock::{LockError, SessionLock};
use crate::session::{SCHEMA_VERSION, Session};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Errors reading or writing session files. Each names the session or file and says what to do;
/// like every oneshot error it reads after "failed to …" and leaves its cause to the chain
/// ([`crate::error`]).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No session has this id or prefix.
    #[error("find session `{id}` under {dir}; run `oneshot list` to see the sessions there")]
    NotFound {
        /// The id asked for.
        id: String,
        /// The sessions directory searched.
        dir: String,
    },
    /// A prefix matched several sessions.
    #[error("pick a session: the prefix `{id}` matches {matches}; give more characters")]
    Ambiguous {
        /// The prefix asked for.
        id: String,
        /// The matching ids, comma-separated.
        matches: String,
    },
    /// `oneshot.json` does not parse.
    #[error(
        "read state file {path}: it is corrupt ({message}); nothing was changed — inspect or \
         restore it, the activity log beside it is intact"
    )]
    Corrupt {
        /// The state file.
        path: String,
        /// Where and why it failed to parse.
        message: String,
    },
    /// Written by a newer oneshot.
    #[error(
        "read state file {path}: it has schema {found}, newer than this oneshot understands \
         ({SCHEMA_VERSION}); upgrade oneshot"
    )]
    NewerSchema {
        /// The state file.
        path: String,
        /// Its schema version.
        found: u32,
    },
    /// Written by an older oneshot, in a format this one does not read.
    #[error(
        "read state file {path}: it has schema {found}, written by an older oneshot; this one \
         reads schema {SCHEMA_VERSION} — finish the session with the oneshot that started it"
    )]
    OlderSchema {
        /// The state file.
        path: String,
        /// Its schema version.
        found: u32,
    },
    /// Another process drives this session (the lock error, its source, names the holder).
    #[error("lock session {id}")]
    Locked {
        /// The session id.
        id: String,
        /// Who holds the lock.
        source: LockError,
    },
    /// A file operation failed.
    #[error("{} {path}", what.strip_prefix("cannot ").unwrap_or(what))]
    Io {
        /// What was being done: a verb, "read" or "write" (a leading "cannot " is dropped).
        what: &'static str,
        /// The file or directory.
        path: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        what,
        path: path.display().to_string(),
        source,
    }
}

/// A session found by [`Store::list`], with its state file or the error reading it.
pub type Listed = (SessionDir, Result<Session, StoreError>);

/// The state directory (`--state-dir`, default `.oneshot`).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// A store rooted at `state_dir`; nothing is created until a session is.
    pub fn new(state_dir: impl Into<PathBuf>) -> Store {
        Store {
            root: state_dir.into(),
        }
    }

    /// The state directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn sessions(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// Creates the directory of a new session with a fresh UUID.
    pub fn create_session(&self) -> Result<SessionDir, StoreError> {
        let id = uuid::Uuid::new_v4().to_string();
        let path = self.sessions().join(&id);
        fs::create_dir_all(&path).map_err(io_err("cannot create", &path))?;
        Ok(SessionDir { id, path })
    }

    /// Opens a session by full id or unique prefix.
    pub fn open(&self, id: &str) -> Result<SessionDir, StoreError> {
        let exact = self.sessions().join(id);
        if !id.is_empty() && !id.contains('/') && exact.join("oneshot.json").is_file() {
            return Ok(SessionDir {
                id: id.to_string(),
                path: exact,
            });
        }
        let matches: Vec<String> = self
            .ids()?
            .into_iter()
            .filter(|s| !id.is_empty() && s.starts_with(id))
            .collect();
        match matches.len() {
            0 => Err(StoreError::NotFound {
                id: id.to_string(),
                dir: self.sessions().display().to_string(),
            }),
            1 => Ok(SessionDir {
                path: self.sessions().join(&matches[0]),
                id: matches.into_iter().next().unwrap_or_default(),
            }),
            _ => Err(StoreError::Ambiguous {
                id: id.to_string(),
                matches: matches.join(", "),
            }),
        }
    }

    /// Ids of all sessions that have a state file, sorted.
    pub fn ids(&self) -> Result<Vec<String>, StoreError> {
        let dir = self.sessions();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("cannot read", &dir)(e)),
        };
        let mut ids: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("oneshot.json").is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// Every session with its state file (or the error reading it), newest first.
    pub fn list(&self) -> Result<Vec<Listed>, StoreError> {
        let mut out: Vec<_> = self
            .ids()?
            .into_iter()
            .map(|id| {
                let dir = SessionDir {
                    path: self.sessions().join(&id),
                    id,
                };
                let file = dir.read_state();
                (dir, file)
            })
            .collect();
        out.sort_by_key(|(_, f)| std::cmp::Reverse(f.as_ref().map(|f| f.created_ms).unwrap_or(0)));
        Ok(out)
    }
}

/// One session's directory.
#[derive(Debug, Clone)]
pub struct SessionDir {
    id: String,
    path: PathBuf,
}

impl SessionDir {
    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `oneshot.json`.
    pub fn state_path(&self) -> PathBuf {
        self.path.join("oneshot.json")
    }

    /// `oneshot-log.json`.
    pub fn log_path(&self) -> PathBuf {
        self.path.join("oneshot-log.json")
    }

    /// The workdir snapshot taken before the last worker run.
    pub fn snapshot_path(&self) -> PathBuf {
        self.path.join("snapshot.json")
    }

    /// Takes the session's exclusive lock.
    pub fn lock(&self) -> Result<SessionLock, StoreError> {
        SessionLock::acquire(&self.path.join("lock")).map_err(|source| StoreError::Locked {
            id: self.id.clone(),
            source,
        })
    }

    /// Reads and validates `oneshot.json`.
    pub fn read_state(&self) -> Result<Session, StoreError> {
        let path = self.state_path();
        let bytes = fs::read(&path).map_err(io_err("cannot read", &path))?;
        let corrupt = |message: String| StoreError::Corrupt {
            path: path.display().to_string(),
            message,
        };
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        let schema = value.get("schema").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
        if schema > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: path.display().to_string(),
                found: schema,
            });
        }
        if schema < SCHEMA_VERSION {
            return Err(StoreError::OlderSchema {
                path: path.display().to_string(),
                found: schema,
            });
        }
        serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))
    }

    /// Writes `oneshot.json` atomically and durably (temp file, rename, fsync).
    pub fn write_state(&self, file: &Session) -> Result<(), StoreError> {
        self.replace_state(file)?;
        self.sync_state()
    }

    /// Makes the last [`SessionDir::replace_state`] durable (fsync of the file and the
    /// directory).
    pub fn sync_state(&self) -> Result<(), StoreError> {
        let path = self.state_path();
        super::sync(&path).map_err(io_err("cannot sync", &path))
    }

    /// Writes `oneshot.json` atomically (a crash of oneshot leaves the old or the new file),
    /// without waiting for the disk: [`SessionDir::sync_state`] does that.
    pub fn replace_state(&self, file: &Session) -> Result<(), StoreError> {
        let path = self.state_path();
        let mut bytes = serde_json::to_vec_pretty(file).map_err(|e| StoreError::Io {
            what: "cannot serialize",
            path: path.display().to_string(),
            source: io::Error::other(e),
        })?;
        bytes.push(b'\n');
        super::replace(&path, &bytes).map_err(io_err("cannot write", &path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::new(tmp.path().join("state"));
        (tmp, store)
    }

    #[test]
    fn open_by_unique_prefix_and_refuse_ambiguous_or_unknown() {
        let (_tmp, store) = store();
        let a = store.create_session().unwrap();
        std::fs::write(a.state_path(), "{}").unwrap();
        let found = store.open(&a.id()[..6]).unwrap();
        assert_eq!(found.id(), a.id());
        assert!(matches!(
            store.open("zzz"),
            Err(StoreError::NotFound { .. })
        ));
        assert!(matches!(store.open(""), Err(StoreError::NotFound { .. })));
        let b = store.create_session().unwrap();
        std::fs::write(b.state_path(), "{}").unwrap();
        assert!(matches!(store.open(""), Err(StoreError::NotFound { .. })));
        // Two ids share at least the empty prefix; make an ambiguous one on purpose.
        let common: String = a
            .id()
            .chars()
            .zip(b.id().chars())
            .take_while(|(x, y)| x == y)
            .map(|(x, _)| x)
            .collect();
        if !common.is_empty() {
            assert!(matches!(
                store.open(&common),
                Err(StoreError::Ambiguous { .. })
            ));
        }
    }

    #[test]
    fn a_corrupt_state_file_is_a_clear_error_and_is_left_alone() {
        let (_tmp, store) = store();
        let dir = store.create_session().unwrap();
        std::fs::write(dir.state_path(), "{\"schema\": 2, \"state\": ").unwrap();
        let err = dir.read_state().unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("corrupt") && msg.contains("oneshot.json"),
            "{msg}"
        );
        assert!(msg.contains("line 1"), "{msg}");
        assert_eq!(
            std::fs::read_to_string(dir.state_path()).unwrap(),
            "{\"schema\": 2, \"state\": "
        );
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let (_tmp, store) = store();
        let dir = store.create_session().unwrap();
        std::fs::write(dir.state_path(), "{\"schema\": 99}").unwrap();
        assert!(matches!(
            dir.read_state(),
            Err(StoreError::NewerSchema { found: 99, .. })
        ));
    }

    #[test]
    fn list_is_empty_without_a_state_dir() {
        let (_tmp, store) = store();
        assert!(store.list().unwrap().is_empty());
    }
}
