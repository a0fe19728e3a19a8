//! What can go wrong reading or writing session files.

use super::lock::LockError;
use crate::session::SCHEMA_VERSION;
use std::io;
use std::path::Path;

/// Errors reading or writing session files. Each names the session or file and says what to do;
/// like every oneshot error it reads after "failed to …" and leaves its cause to the chain
/// ([`crate::error`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// The state file's seal does not hold: it was changed outside oneshot.
    // The seal's error is part of the sentence (what to do comes after it), so it is written
    // here whole, with its own cause, and is not also the source: printed once.
    #[error(
        "trust state file {path}: {}; nothing was changed — an agent may have rewritten it: \
         check the workdir and start a new session",
        crate::error::chain(.seal)
    )]
    Tampered {
        /// The state file.
        path: String,
        /// What is wrong with the seal.
        seal: super::seal::SealError,
    },
    /// The user's sealing key could not be read or made.
    #[error(
        "use the sealing key {path} (set {} to put it elsewhere)",
        super::seal::KEY_FILE_ENV
    )]
    Key {
        /// The key file.
        path: String,
        /// The underlying error.
        #[source]
        source: io::Error,
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

pub(crate) fn io_err<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        what,
        path: path.display().to_string(),
        source,
    }
}
