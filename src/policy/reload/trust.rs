//! The trust store: which policy file contents a human has approved, like Neovim's `vim.secure`.
//!
//! A JSON file `{ "version": 1, "files": { "/abs/path/strict.lua": "sha256:<hex>" } }` maps each
//! canonical path to the full sha256 of the content that was trusted. Trust is per content, not
//! per path: once the file changes again it is untrusted until trusted again.

use super::error::TrustError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment variable that overrides where the trust store lives.
pub const TRUST_FILE_ENV: &str = "ONESHOT_TRUST_FILE";

const VERSION: u32 = 1;

/// A handle on a trust store file. Cheap to clone; every call reads (and, for changes, writes)
/// the file, so several processes see each other's decisions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustStore {
    path: PathBuf,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    version: u32,
    files: BTreeMap<PathBuf, String>,
}

impl TrustStore {
    /// The store at an explicit path (tests, embedding programs).
    pub fn at(path: impl Into<PathBuf>) -> TrustStore {
        TrustStore { path: path.into() }
    }

    /// The store at its default location: `$ONESHOT_TRUST_FILE`, else
    /// `$XDG_DATA_HOME/oneshot/trust.json`, else `$HOME/.local/share/oneshot/trust.json`.
    pub fn from_env() -> Result<TrustStore, TrustError> {
        default_path(|key| std::env::var_os(key))
            .map(TrustStore::at)
            .ok_or(TrustError::NoLocation)
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Trusts `file`'s current content and returns its hash (`sha256:` + 64 hex digits).
    pub fn trust(&self, file: &Path) -> Result<String, TrustError> {
        let mut hashes = self.trust_all(&[file], |_, _| Ok::<(), TrustError>(()))?;
        Ok(hashes.remove(0))
    }

    /// Trusts the current content of every file in `files`, or of none: each file is read
    /// once, `check` sees exactly the bytes whose hash is recorded (so what was checked is what
    /// is trusted, even if the file changes meanwhile), and the store is written once, only
    /// when every file was read and passed. Returns the hashes in the order of `files`.
    pub fn trust_all<E: From<TrustError>>(
        &self,
        files: &[&Path],
        check: impl Fn(&Path, &[u8]) -> Result<(), E>,
    ) -> Result<Vec<String>, E> {
        let mut entries = Vec::with_capacity(files.len());
        for &file in files {
            let key = canonical(file)?;
            let bytes = fs::read(&key).map_err(|source| TrustError::File {
                path: file.to_path_buf(),
                source,
            })?;
            check(file, &bytes)?;
            entries.push((key, sha256_hex(&bytes)));
        }
        let mut store = self.read()?;
        let hashes = entries.iter().map(|(_, h)| h.clone()).collect();
        store.files.extend(entries);
        self.write(&store)?;
        Ok(hashes)
    }

    /// Forgets any trust recorded for `file`; returns whether there was any.
    pub fn untrust(&self, file: &Path) -> Result<bool, TrustError> {
        // A deleted file can still be untrusted, under the path it was trusted as.
        let key = canonical(file).unwrap_or_else(|_| absolute(file));
        let mut store = self.read()?;
        let removed = store.files.remove(&key).is_some();
        if removed {
            self.write(&store)?;
        }
        Ok(removed)
    }

    /// Whether `content_hash` (as [`sha256_hex`] formats it) is the trusted content of `file`.
    ///
    /// An unreadable or corrupt store trusts nothing: failing closed is the point of the store.
    pub fn is_trusted(&self, file: &Path, content_hash: &str) -> bool {
        let key = canonical(file).unwrap_or_else(|_| absolute(file));
        match self.read() {
            Ok(store) => store.files.get(&key).is_some_and(|h| h == content_hash),
            Err(e) => {
                tracing::warn!(
                    "{}; no policy change counts as trusted",
                    crate::error::failure(&e)
                );
                false
            }
        }
    }

    /// Every trusted file and its hash.
    pub fn entries(&self) -> Result<BTreeMap<PathBuf, String>, TrustError> {
        Ok(self.read()?.files)
    }

    fn read(&self) -> Result<TrustFile, TrustError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TrustFile {
                    version: VERSION,
                    files: BTreeMap::new(),
                });
            }
            Err(source) => return Err(self.store_err(source)),
        };
        let corrupt = |message: String| TrustError::Corrupt {
            path: self.path.clone(),
            message,
        };
        let file: TrustFile = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
        if file.version != VERSION {
            return Err(corrupt(format!(
                "version {} is not supported (expected {VERSION})",
                file.version
            )));
        }
        Ok(file)
    }

    /// Temp file in the same directory, fsync, rename, fsync the directory: a crash leaves
    /// either the old store or the new one, never half of one.
    fn write(&self, store: &TrustFile) -> Result<(), TrustError> {
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&dir).map_err(|e| self.store_err(e))?;
        let mut json = serde_json::to_vec_pretty(store).expect("a trust file always serializes");
        json.push(b'\n');
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trust.json".into());
        // Unique per process and per call, so concurrent writers never share a temp file.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        let result = (|| {
            let mut f = File::create(&tmp)?;
            f.write_all(&json)?;
            f.sync_all()?;
            fs::rename(&tmp, &self.path)?;
            // The rename is only durable once the directory entry is.
            File::open(&dir)?.sync_all()
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result.map_err(|e| self.store_err(e))
    }

    fn store_err(&self, source: std::io::Error) -> TrustError {
        TrustError::Store {
            path: self.path.clone(),
            source,
        }
    }
}

/// `sha256:` and the 64 hex digits of the digest of `bytes`: the hash trust is recorded under.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest {
        out.push(char::from_digit(u32::from(b >> 4), 16).unwrap());
        out.push(char::from_digit(u32::from(b & 0xf), 16).unwrap());
    }
    out
}

/// The default store location, with the environment passed in so it can be tested without
/// touching the process environment.
fn default_path(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(p) = var(TRUST_FILE_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let data = crate::paths::user_dir(&var, "XDG_DATA_HOME", ".local/share")?;
    Some(data.join("oneshot").join("trust.json"))
}

fn canonical(file: &Path) -> Result<PathBuf, TrustError> {
    fs::canonicalize(file).map_err(|source| TrustError::File {
        path: file.to_path_buf(),
        source,
    })
}

fn absolute(file: &Path) -> PathBuf {
    std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf())
}

/// Whether `file` lies inside `workdir`, where an agent can write. Both the plain absolute and
/// the canonical path of each are compared, so a symlink in the workdir cannot hide a file an
/// agent wrote elsewhere, and a workdir given through a symlink still counts.
pub fn inside_workdir(file: &Path, workdir: &Path) -> bool {
    let forms = |p: &Path| {
        // `..` taken away by the text: `WORKDIR/../x.lua` is not inside (`absolute` keeps it).
        let given = lexical(&std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| given.clone());
        [given, real]
    };
    let dirs = forms(workdir);
    forms(file)
        .iter()
        .any(|f| dirs.iter().any(|d| f.starts_with(d)))
}

/// `path` with each `..` taking away the component before it (and `.` dropped), by the text
/// alone; the canonical form, compared beside it, is the one that follows symlinks.
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_beside_the_workdir_through_dot_dot_is_outside() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("repo");
        std::fs::create_dir(&work).unwrap();
        assert!(!inside_workdir(&work.join("../policy.lua"), &work));
        assert!(inside_workdir(&work.join("sub/../policy.lua"), &work));
        assert!(inside_workdir(&work.join("./policy.lua"), &work));
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn location_follows_the_environment_in_order() {
        let all = [
            (TRUST_FILE_ENV, "/x/trust.json"),
            ("XDG_DATA_HOME", "/data"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(default_path(env(&all)), Some("/x/trust.json".into()));
        assert_eq!(
            default_path(env(&all[1..])),
            Some("/data/oneshot/trust.json".into())
        );
        assert_eq!(
            default_path(env(&all[2..])),
            Some("/home/u/.local/share/oneshot/trust.json".into())
        );
        // The XDG spec says relative values are invalid and must be ignored.
        let relative = [("XDG_DATA_HOME", "data"), ("HOME", "/home/u")];
        assert_eq!(
            default_path(env(&relative)),
            Some("/home/u/.local/share/oneshot/trust.json".into())
        );
        assert_eq!(default_path(env(&[])), None);
    }

    #[test]
    fn hash_is_full_sha256() {
        assert_eq!(
            sha256_hex(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
