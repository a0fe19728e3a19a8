//! Where sessions live: `<state-dir>/sessions/<id>/`.

use super::error::{StoreError, io_err};
use super::lock::SessionLock;
use super::seal::{Keys, SEAL_FILE, default_key_path, verify, write_seal};
use super::summary::{Summary, SummaryReader};
use crate::redact::Redacted;
use crate::session::{SCHEMA_VERSION, Session};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A session found by [`Store::list`], with the summary of its state file or the error reading
/// it.
pub type Listed = (SessionDir, Result<Summary, StoreError>);

/// The state directory (`--state-dir`, default `.oneshot`).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    key: Keys,
}

impl Store {
    /// A store rooted at `state_dir`; nothing is created until a session is. State files are
    /// sealed with the user's key (see [`Store::with_key_file`]).
    pub fn new(state_dir: impl Into<PathBuf>) -> Store {
        let root = state_dir.into();
        let key = default_key_path(|k| std::env::var_os(k)).unwrap_or_else(|| {
            tracing::warn!(
                "no home directory for the sealing key; keeping it in the state directory, \
                 where it protects nothing from an agent that can write there"
            );
            root.join("key")
        });
        Store {
            root,
            key: Keys::at(key),
        }
    }

    /// The same store with its sealing key in `path` instead of the user's default.
    pub fn with_key_file(mut self, path: impl Into<PathBuf>) -> Store {
        self.key = Keys::at(path.into());
        self
    }

    fn dir(&self, id: String, path: PathBuf) -> SessionDir {
        SessionDir {
            id,
            path,
            key: self.key.clone(),
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
        super::location::ignore_in_repo(&self.root);
        Ok(self.dir(id, path))
    }

    /// Opens a session by full id or unique prefix.
    pub fn open(&self, id: &str) -> Result<SessionDir, StoreError> {
        let exact = self.sessions().join(id);
        if !id.is_empty() && !id.contains('/') && has_state_file(&exact) {
            return Ok(self.dir(id.to_string(), exact));
        }
        let matches: Vec<String> = self
            .names()?
            .into_iter()
            .filter(|s| !id.is_empty() && s.starts_with(id))
            .filter(|s| has_state_file(&self.sessions().join(s)))
            .collect();
        match matches.len() {
            0 => Err(StoreError::NotFound {
                id: id.to_string(),
                dir: self.sessions().display().to_string(),
            }),
            1 => Ok(self.dir(matches[0].clone(), self.sessions().join(&matches[0]))),
            _ => Err(StoreError::Ambiguous {
                id: id.to_string(),
                matches: matches.join(", "),
            }),
        }
    }

    /// The names in the sessions directory, sorted; none when it does not exist.
    fn names(&self) -> Result<Vec<String>, StoreError> {
        let dir = self.sessions();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("cannot read", &dir)(e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Ids of all sessions that have a state file, sorted.
    pub fn ids(&self) -> Result<Vec<String>, StoreError> {
        let sessions = self.sessions();
        let mut ids = self.names()?;
        ids.retain(|id| has_state_file(&sessions.join(id)));
        Ok(ids)
    }

    /// Every session with the summary of its state file (or the error reading it): newest
    /// first by creation time, then by id; those that cannot be read last, by id.
    ///
    /// Reads only the head of each state file ([`Summary`]).
    pub fn list(&self) -> Result<Vec<Listed>, StoreError> {
        let (sessions, mut reader) = (self.sessions(), SummaryReader::new());
        let mut out: Vec<Listed> = self
            .names()?
            .into_iter()
            .filter_map(|id| summary(self, &sessions, id, &mut reader))
            .collect();
        out.sort_by(|(a, sa), (b, sb)| newer(sa, sb).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The first session of [`Store::list`]: the newest, or when no state file reads, the
    /// unreadable one with the smallest id. `None` when there is no session.
    ///
    /// Reads the state files of the directories changed last first, and stops at the first
    /// directory last changed more than an hour before the newest creation time found so far:
    /// a session's directory changes whenever its state file is written, the first time after
    /// its creation time was taken, so none of the rest can be newer.
    pub fn latest(&self) -> Result<Option<SessionDir>, StoreError> {
        let sessions = self.sessions();
        let mut names: Vec<(Option<u64>, String)> = self
            .names()?
            .into_iter()
            .map(|id| (mtime_ms(&sessions.join(&id)), id))
            .collect();
        // Unknown times first (they must be read), then the last changed; ties by id.
        names.sort_by_key(|(mtime, _)| std::cmp::Reverse(mtime.unwrap_or(u64::MAX)));
        let mut reader = SummaryReader::new();
        let mut best: Option<Listed> = None;
        for (mtime, id) in names {
            let created = best
                .as_ref()
                .and_then(|(_, s)| s.as_ref().ok())
                .map(|s| s.created_ms);
            if let (Some(mtime), Some(created)) = (mtime, created)
                && mtime.saturating_add(MTIME_SLACK_MS) < created
            {
                break;
            }
            let Some(next) = summary(self, &sessions, id, &mut reader) else {
                continue;
            };
            let first = best.as_ref().is_none_or(|(dir, b)| {
                newer(&next.1, b)
                    .then_with(|| next.0.id.cmp(&dir.id))
                    .is_lt()
            });
            if first {
                best = Some(next);
            }
        }
        Ok(best.map(|(dir, _)| dir))
    }
}

/// Whether the session directory `dir` has a state file: something that is not a directory at
/// `oneshot.json`. A FIFO or a socket there makes a damaged session, which reading reports
/// (naming the file), not a session that is not there.
fn has_state_file(dir: &Path) -> bool {
    fs::symlink_metadata(dir.join("oneshot.json")).is_ok_and(|m| !m.is_dir())
}

/// Session `id` under `sessions` with its summary; `None` when it has no state file (a
/// directory being created, a stray file).
fn summary(
    store: &Store,
    sessions: &Path,
    id: String,
    reader: &mut SummaryReader,
) -> Option<Listed> {
    let dir = store.dir(id.clone(), sessions.join(&id));
    match reader.read(&dir.state_path()) {
        Err(StoreError::Io { source, .. })
            if matches!(
                source.kind(),
                io::ErrorKind::NotFound
                    | io::ErrorKind::NotADirectory
                    | io::ErrorKind::IsADirectory
            ) =>
        {
            None
        }
        summary => Some((dir, summary)),
    }
}

/// How much earlier than its session's creation time a session directory's mtime may be and
/// [`Store::latest`] still read it: file times come from a coarser clock than `created_ms`, and
/// a clock corrected backwards between a session's creation and its last write leaves the
/// directory older than the session.
const MTIME_SLACK_MS: u64 = 60 * 60 * 1000;

/// When `path` last changed, unix milliseconds; `None` when that cannot be told.
fn mtime_ms(path: &Path) -> Option<u64> {
    let modified = fs::metadata(path).and_then(|m| m.modified()).ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    u64::try_from(since.as_millis()).ok()
}

/// The listing order of two summaries: the newer first, the unreadable last.
fn newer(a: &Result<Summary, StoreError>, b: &Result<Summary, StoreError>) -> std::cmp::Ordering {
    let created = |s: &Result<Summary, StoreError>| s.as_ref().ok().map(|s| s.created_ms);
    created(b).cmp(&created(a))
}

/// One session's directory.
#[derive(Debug, Clone)]
pub struct SessionDir {
    id: String,
    path: PathBuf,
    key: Keys,
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

    /// The lock file (see [`SessionLock`]).
    pub fn lock_path(&self) -> PathBuf {
        self.path.join("lock")
    }

    /// Takes the session's exclusive lock. Temp files a killed oneshot left behind
    /// (`.oneshot.json.tmp.PID`) are removed then: only the lock holder writes here, so none of
    /// them is being written.
    pub fn lock(&self) -> Result<SessionLock, StoreError> {
        let lock =
            SessionLock::acquire(&self.lock_path()).map_err(|source| StoreError::Locked {
                id: self.id.clone(),
                source,
            })?;
        self.remove_stale_temp_files();
        Ok(lock)
    }

    fn remove_stale_temp_files(&self) {
        let Ok(entries) = fs::read_dir(&self.path) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if super::atomic::is_temp_name(&name.to_string_lossy()) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// Reads and validates `oneshot.json`.
    pub fn read_state(&self) -> Result<Session, StoreError> {
        let path = self.state_path();
        let bytes = super::regular::read(&path).map_err(io_err("cannot read", &path))?;
        // A good file parses straight into the session; only a bad one goes the long way
        // below, which names what is wrong with it.
        if let Ok(session) = serde_json::from_slice(&bytes) {
            return Ok(session);
        }
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

    /// Writes `oneshot.json` atomically and durably (temp file, rename, fsync). The session is
    /// [`Redacted`]: nothing reaches the state file without passing the redactor.
    pub fn write_state(&self, file: &Redacted<Session>) -> Result<(), StoreError> {
        self.replace_state(file)?;
        self.sync_state()
    }

    /// Makes the last [`SessionDir::replace_state`] durable (fsync of the file, its seal and
    /// the directory).
    pub fn sync_state(&self) -> Result<(), StoreError> {
        let seal = self.path.join(SEAL_FILE);
        super::sync(&seal).map_err(io_err("cannot sync", &seal))?;
        let path = self.state_path();
        super::sync(&path).map_err(io_err("cannot sync", &path))
    }

    /// [`SessionDir::read_state`] for a session about to be driven again: the file must carry
    /// the seal oneshot gave it, or it is refused ([`StoreError::Tampered`]).
    pub fn read_sealed_state(&self) -> Result<Session, StoreError> {
        let path = self.state_path();
        let bytes = super::regular::read(&path).map_err(io_err("cannot read", &path))?;
        let key = self.key.get()?;
        match verify(&self.path, key, &bytes) {
            Ok(()) => self.read_state(),
            Err(source) => {
                // A file that does not even parse is reported as what it is first.
                self.read_state()?;
                Err(StoreError::Tampered {
                    path: path.display().to_string(),
                    seal: source,
                })
            }
        }
    }

    /// Writes `oneshot.json` atomically (a crash of oneshot leaves the old or the new file),
    /// without waiting for the disk: [`SessionDir::sync_state`] does that.
    pub fn replace_state(&self, file: &Redacted<Session>) -> Result<(), StoreError> {
        let path = self.state_path();
        let mut bytes = serde_json::to_vec_pretty(file.get()).map_err(|e| StoreError::Io {
            what: "cannot serialize",
            path: path.display().to_string(),
            source: io::Error::other(e),
        })?;
        bytes.push(b'\n');
        // The seal goes first: a crash between the two leaves the old file, still sealed.
        let key = self.key.get()?;
        write_seal(&self.path, key, &bytes).map_err(io_err("cannot write", &path))?;
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
    fn taking_the_lock_removes_temp_files_a_killed_oneshot_left() {
        let (_d, store) = store();
        let dir = store.create_session().unwrap();
        let stale = dir.path().join(".oneshot.json.tmp.4242");
        let kept = dir.path().join(".notes.tmp.txt");
        fs::write(&stale, "half a state").unwrap();
        fs::write(&kept, "not ours").unwrap();
        let _lock = dir.lock().unwrap();
        assert!(!stale.exists(), "a stale temp file is removed");
        assert!(kept.exists(), "other files stay");
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
        assert!(store.latest().unwrap().is_none());
    }

    /// A session created at `created_ms`, its directory last changed at `mtime_ms`.
    fn session_at(store: &Store, created_ms: u64, mtime_ms: u64) -> SessionDir {
        let dir = store.create_session().unwrap();
        let s = Session::new(
            crate::session::NewSession {
                id: dir.id().into(),
                task: format!("task {created_ms}"),
                workdir: "/work".into(),
                worker_cmd: "w".into(),
                auditor_cmd: "a".into(),
            },
            crate::session::PolicyRef {
                path: None,
                hash: "h".into(),
                generation: 1,
                budget: None,
            },
            3,
            created_ms,
        );
        let redactor = crate::redact::Redactor::new(&[], Vec::new()).unwrap();
        dir.replace_state(&redactor.seal(&s).unwrap()).unwrap();
        set_mtime(dir.path(), mtime_ms);
        dir
    }

    fn set_mtime(path: &Path, ms: u64) {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
        fs::File::open(path).unwrap().set_modified(t).unwrap();
    }

    fn ids(listed: &[Listed]) -> Vec<&str> {
        listed.iter().map(|(d, _)| d.id()).collect()
    }

    #[test]
    fn list_is_newest_first_ties_by_id_and_unreadable_last_and_latest_agrees() {
        let (_tmp, store) = store();
        const HOUR: u64 = 3_600_000;
        let old = session_at(&store, 1_000 * HOUR, 1_000 * HOUR);
        let new = session_at(&store, 2_000 * HOUR, 2_000 * HOUR);
        let (a, b) = (
            session_at(&store, 1_500 * HOUR, 1_500 * HOUR),
            session_at(&store, 1_500 * HOUR, 1_500 * HOUR),
        );
        let (tie1, tie2) = if a.id() < b.id() { (a, b) } else { (b, a) };
        let bad = store.create_session().unwrap();
        fs::write(bad.state_path(), "{\"schema\": 2, \"state\": ").unwrap();
        // Not sessions: a directory without a state file (being created), a stray file, a
        // directory where the state file should be.
        store.create_session().unwrap();
        fs::write(store.sessions().join("stray"), "x").unwrap();
        fs::create_dir(store.create_session().unwrap().state_path()).unwrap();

        let listed = store.list().unwrap();
        assert_eq!(
            ids(&listed),
            [new.id(), tie1.id(), tie2.id(), old.id(), bad.id()]
        );
        let msg = listed[4].1.as_ref().unwrap_err().to_string();
        assert!(msg.contains("corrupt"), "{msg}");
        assert_eq!(
            listed[0].1.as_ref().unwrap().task,
            format!("task {}", 2_000 * HOUR)
        );
        assert_eq!(store.latest().unwrap().unwrap().id(), new.id());

        // The newest created but changed long before the others were created: still found
        // within the slack...
        set_mtime(new.path(), 1_999 * HOUR);
        assert_eq!(store.latest().unwrap().unwrap().id(), new.id());
        // ...and past it, taken for older than its creation time says (the price of not
        // reading every file).
        set_mtime(new.path(), 1_400 * HOUR);
        assert_eq!(store.latest().unwrap().unwrap().id(), tie1.id());
        assert_eq!(ids(&store.list().unwrap())[0], new.id());
    }

    #[test]
    fn latest_without_a_readable_session_is_the_first_unreadable_by_id() {
        let (_tmp, store) = store();
        let mut dirs: Vec<SessionDir> = (0..3).map(|_| store.create_session().unwrap()).collect();
        for d in &dirs {
            fs::write(d.state_path(), "garbage").unwrap();
        }
        dirs.sort_by(|a, b| a.id().cmp(b.id()));
        set_mtime(dirs[0].path(), 1);
        assert_eq!(store.latest().unwrap().unwrap().id(), dirs[0].id());
        assert_eq!(ids(&store.list().unwrap())[0], dirs[0].id());
    }

    #[test]
    fn a_good_state_file_reads_whole_and_the_reader_agrees() {
        let (_tmp, store) = store();
        let dir = session_at(&store, 5, 5);
        let s = dir.read_state().unwrap();
        let sum = SummaryReader::new().read(&dir.state_path()).unwrap();
        assert_eq!(
            (
                sum.id.as_str(),
                sum.state,
                sum.created_ms,
                sum.task.as_str()
            ),
            (s.id.as_str(), s.state(), s.created_ms, s.task.as_str())
        );
    }
}
