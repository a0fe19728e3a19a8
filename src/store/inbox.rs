//! A session's inbox: each message said to it (`oneshot say`, the dashboard) waits here as one
//! file until the oneshot that drives the session has taken it into the session's state file.
//! A file, not a signal: a message said while nobody drives the session is there for the
//! next `oneshot resume`, and one said while oneshot is crashing is there for its successor.
//! The driving engine watches the directory (inotify) and removes each file only after the
//! state file holding the message is written; a message read twice is recognised by its id.

use super::SessionDir;
use super::error::StoreError;
use crate::pipeline::Redacted;
use crate::session::Said;
use std::fs;
use std::path::{Path, PathBuf};

/// The inbox directory's name inside a session directory.
const INBOX: &str = "inbox";

/// A message waiting in the inbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Posted {
    /// Its file (removed once the session holds the message).
    pub path: PathBuf,
    /// The message.
    pub said: Said,
}

/// A file in the inbox that is not a message: set aside (renamed `*.bad`) and said so.
#[derive(Debug, Clone, PartialEq)]
pub struct BadPost {
    /// Where it is now.
    pub path: PathBuf,
    /// Why it was refused.
    pub why: String,
}

impl SessionDir {
    /// The inbox directory.
    pub fn inbox_path(&self) -> PathBuf {
        self.path().join(INBOX)
    }

    /// Posts a message to the session's inbox (made private if new), atomically: a reader never
    /// sees half a file. Returns the file.
    pub fn post(&self, said: &Redacted<Said>) -> Result<PathBuf, StoreError> {
        let dir = self.inbox_path();
        super::private_dir::create_private_dir(&dir).map_err(|source| StoreError::Io {
            what: "create the inbox",
            path: dir.display().to_string(),
            source,
        })?;
        let said = said.get();
        let path = dir.join(format!("{:013}-{}.json", said.ts, said.id));
        let bytes = serde_json::to_vec_pretty(said).expect("a message serializes");
        super::atomic::replace(&path, &bytes).map_err(|source| StoreError::Io {
            what: "write the message",
            path: path.display().to_string(),
            source,
        })?;
        Ok(path)
    }

    /// The messages waiting, oldest first; files that are not messages are set aside and
    /// returned as such. An inbox that does not exist holds nothing.
    pub fn read_inbox(&self) -> (Vec<Posted>, Vec<BadPost>) {
        let (mut good, mut bad) = (Vec::new(), Vec::new());
        let Ok(entries) = fs::read_dir(self.inbox_path()) else {
            return (good, bad);
        };
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| is_message_name(p))
            .collect();
        paths.sort();
        for path in paths {
            match read_post(&path) {
                Ok(said) => good.push(Posted { path, said }),
                Err(why) => {
                    let aside = path.with_extension("json.bad");
                    let path = match fs::rename(&path, &aside) {
                        Ok(()) => aside,
                        Err(_) => path,
                    };
                    bad.push(BadPost { path, why });
                }
            }
        }
        (good, bad)
    }
}

/// `<ms>-<id>.json`, not a temp file of a write in progress.
fn is_message_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.ends_with(".json") && !super::atomic::is_temp_name(name)
}

fn read_post(path: &Path) -> Result<Said, String> {
    let bytes = super::regular::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("it is not a message ({e})"))
}

/// Removes a message's file once the session holds it; a file already gone is fine.
pub fn remove_post(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(StoreError::Io {
            what: "remove the message",
            path: path.display().to_string(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::MessageStatus;

    fn said(id: &str, ts: u64) -> Said {
        Said {
            id: id.into(),
            actor: "ann".into(),
            ts,
            text: "look at the parser first".into(),
            now: false,
            status: MessageStatus::Received,
            taken_ms: None,
            taken_iteration: None,
        }
    }

    #[test]
    fn posted_messages_read_back_oldest_first_and_bad_files_are_set_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let store = crate::store::Store::new(tmp.path());
        let dir = store.create_session().unwrap();
        let r = crate::pipeline::Redactor::new(&[], vec![]).unwrap();
        assert_eq!(dir.read_inbox(), (vec![], vec![]));
        let second = dir.post(&r.seal(&said("b", 2_000)).unwrap()).unwrap();
        let first = dir.post(&r.seal(&said("a", 1_000)).unwrap()).unwrap();
        fs::write(dir.inbox_path().join("0000000001500-x.json"), b"{not json").unwrap();
        let (good, bad) = dir.read_inbox();
        assert_eq!(
            good.iter().map(|p| p.said.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(good[0].path, first);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].why.contains("not a message"), "{}", bad[0].why);
        assert!(bad[0].path.to_string_lossy().ends_with(".json.bad"));
        remove_post(&second).unwrap();
        remove_post(&second).unwrap();
        assert_eq!(dir.read_inbox().0.len(), 1);
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.inbox_path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "private: {mode:o}");
    }
}
