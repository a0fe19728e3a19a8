//! The state file is tamper-evident: each version is sealed with an HMAC-SHA256 under a key
//! that belongs to the user and lives outside any workdir, so an agent that rewrites
//! `oneshot.json` (to name another policy, another workdir, another process to kill) is caught
//! on resume.
//!
//! The seal is a sidecar, `oneshot.mac`: the MAC of the current state file and of the one
//! before it. It is written (atomically) before the state file is replaced, so a crash between
//! the two leaves the old state file with its MAC still listed: never a false alarm.
//!
//! The key: 32 random bytes, hex, in `$ONESHOT_KEY_FILE`, else `$XDG_STATE_HOME/oneshot/key`,
//! else `$HOME/.local/state/oneshot/key`, created on first use with mode 0600. Without a home
//! directory it sits beside the store's sessions, with a warning (it then protects nothing
//! against an agent that can write there).

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The environment variable naming the key file.
pub const KEY_FILE_ENV: &str = "ONESHOT_KEY_FILE";
/// The sidecar's name in a session directory.
pub const SEAL_FILE: &str = "oneshot.mac";

/// The user's sealing key.
#[derive(Clone)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(…)")
    }
}

impl Key {
    /// Reads the key at `path`, creating it (and its directory, private to the user) when there
    /// is none yet.
    pub fn load_or_create(path: &Path) -> io::Result<Key> {
        match super::regular::read_to_string(path) {
            Ok(text) => return Key::parse(text.trim(), path),
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        if let Some(dir) = path.parent() {
            super::private_dir::create_private_dir(dir)?;
        }
        let mut bytes = [0u8; 32];
        fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        // Written whole under a private name, then linked into place: another oneshot never
        // reads a half-written key, and if one linked its key first, that key wins.
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        let written = (|| {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(hex(&bytes).as_bytes())?;
            f.sync_all()?;
            fs::hard_link(&tmp, path)
        })();
        let _ = fs::remove_file(&tmp);
        match written {
            Ok(()) => Ok(Key(bytes)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Key::parse(super::regular::read_to_string(path)?.trim(), path)
            }
            Err(e) => Err(e),
        }
    }

    fn parse(text: &str, path: &Path) -> io::Result<Key> {
        let bad = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is not a oneshot key (64 hex digits)", path.display()),
            )
        };
        if text.len() != 64 {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Key(bytes))
    }

    /// The seal of `bytes`, hex.
    pub fn seal(&self, bytes: &[u8]) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("any key length");
        mac.update(bytes);
        hex(&mac.finalize().into_bytes())
    }
}

/// Where the sealing key is, and the key once loaded (shared by a store and its sessions).
#[derive(Debug, Clone)]
pub(super) struct Keys(std::sync::Arc<KeySource>);

#[derive(Debug)]
struct KeySource {
    path: PathBuf,
    key: std::sync::OnceLock<Result<Key, String>>,
}

impl Keys {
    pub(super) fn at(path: PathBuf) -> Keys {
        Keys(std::sync::Arc::new(KeySource {
            path,
            key: std::sync::OnceLock::new(),
        }))
    }

    /// The key, loaded (or made) on first use.
    pub(super) fn get(&self) -> Result<&Key, super::StoreError> {
        let source = &self.0;
        source
            .key
            .get_or_init(|| Key::load_or_create(&source.path).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| super::StoreError::Key {
                path: source.path.display().to_string(),
                source: io::Error::other(message.clone()),
            })
    }
}

/// Where the key lives by default (see the module documentation); `None` without a home.
pub(crate) fn default_key_path(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(p) = var(KEY_FILE_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let state = crate::paths::user_dir(&var, "XDG_STATE_HOME", ".local/state")?;
    Some(state.join("oneshot").join("key"))
}

/// Seals `bytes`, about to replace the state file in `dir`: writes the sidecar with the new
/// seal first and the current state file's seal after it.
pub(crate) fn write_seal(dir: &Path, key: &Key, bytes: &[u8]) -> io::Result<()> {
    let path = dir.join(SEAL_FILE);
    let previous = super::regular::read_to_string(&path)
        .ok()
        .and_then(|t| t.lines().next().map(str::to_owned));
    let mut text = key.seal(bytes);
    text.push('\n');
    if let Some(p) = previous {
        text.push_str(&p);
        text.push('\n');
    }
    super::replace(&path, text.as_bytes())
}

/// Whether `bytes` (the state file in `dir`) carry one of the seals the sidecar lists.
pub fn verify(dir: &Path, key: &Key, bytes: &[u8]) -> Result<(), SealError> {
    let text = match super::regular::read_to_string(&dir.join(SEAL_FILE)) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(SealError::Missing),
        Err(e) => return Err(SealError::Read(e)),
    };
    let seal = key.seal(bytes);
    // Constant time is not needed here: the attacker cannot observe the comparison.
    if text.lines().any(|l| l.trim() == seal) {
        Ok(())
    } else {
        Err(SealError::Mismatch)
    }
}

/// Why a state file's seal does not hold.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// No sidecar.
    #[error("it has no seal ({SEAL_FILE} is missing)")]
    Missing,
    /// The sidecar lists other seals: the file was changed outside oneshot, or sealed with
    /// another user's key.
    #[error("its seal does not match: it was changed outside oneshot, or by another user")]
    Mismatch,
    /// The sidecar could not be read.
    #[error("its seal could not be read")]
    Read(#[source] io::Error),
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_is_made_once_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/key");
        let k1 = Key::load_or_create(&path).unwrap();
        let k2 = Key::load_or_create(&path).unwrap();
        assert_eq!(k1.seal(b"x"), k2.seal(b"x"));
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        fs::write(&path, "not a key").unwrap();
        assert!(Key::load_or_create(&path).is_err());
    }

    #[test]
    fn only_directories_made_for_the_key_are_made_private() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        Key::load_or_create(&shared.join("key")).unwrap();
        assert_eq!(
            mode(&shared),
            0o1777,
            "an existing directory keeps its mode"
        );
        assert_eq!(mode(&shared.join("key")), 0o600);
        Key::load_or_create(&shared.join("a/b/key")).unwrap();
        assert_eq!(mode(&shared), 0o1777);
        assert_eq!(mode(&shared.join("a")), 0o700, "made for the key: private");
        assert_eq!(mode(&shared.join("a/b")), 0o700);
        // A file where a directory should be is an error, not a retry forever.
        fs::write(shared.join("f"), "x").unwrap();
        assert!(Key::load_or_create(&shared.join("f/key")).is_err());
    }

    #[test]
    fn seals_follow_the_file_and_survive_a_crash_between_the_two_writes() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::load_or_create(&dir.path().join("key")).unwrap();
        let other = Key::load_or_create(&dir.path().join("other")).unwrap();
        assert!(matches!(
            verify(dir.path(), &key, b"v1"),
            Err(SealError::Missing)
        ));
        write_seal(dir.path(), &key, b"v1").unwrap();
        assert!(verify(dir.path(), &key, b"v1").is_ok());
        // The sidecar for v2 is written, the state file not yet (a crash here): v1 still holds.
        write_seal(dir.path(), &key, b"v2").unwrap();
        assert!(verify(dir.path(), &key, b"v1").is_ok());
        assert!(verify(dir.path(), &key, b"v2").is_ok());
        // A forged file, or the right one under another key, does not.
        assert!(matches!(
            verify(dir.path(), &key, b"forged"),
            Err(SealError::Mismatch)
        ));
        assert!(matches!(
            verify(dir.path(), &other, b"v2"),
            Err(SealError::Mismatch)
        ));
        // Two writes on, v1 is no longer accepted.
        write_seal(dir.path(), &key, b"v3").unwrap();
        assert!(verify(dir.path(), &key, b"v1").is_err());
    }

    #[test]
    fn the_key_lives_in_the_users_state_directory() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            default_key_path(env(&[(KEY_FILE_ENV, "/k"), ("HOME", "/h")])),
            Some(PathBuf::from("/k"))
        );
        assert_eq!(
            default_key_path(env(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")])),
            Some(PathBuf::from("/s/oneshot/key"))
        );
        assert_eq!(
            default_key_path(env(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.local/state/oneshot/key"))
        );
        assert_eq!(default_key_path(env(&[])), None);
    }
}
