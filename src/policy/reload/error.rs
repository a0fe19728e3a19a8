//! What can stop hot reload from starting, and what can go wrong with the trust store.
//!
//! Like every oneshot error, messages read after "failed to …" and leave the cause to the
//! error chain ([`crate::error`]).

use std::path::PathBuf;

/// Hot reload could not be set up or kept up (the session itself survives all of these: it
/// keeps its current policy).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReloadError {
    /// The OS file watcher could not be created (inotify instance limit, …).
    #[error("start the policy file watcher")]
    Watcher(#[source] notify::Error),
    /// A policy file's directory could not be watched.
    #[error("watch {} for policy changes", dir.display())]
    Watch {
        /// The directory that was to be watched.
        dir: PathBuf,
        /// What notify said.
        #[source]
        source: notify::Error,
    },
    /// A path could not be resolved to its canonical form (it does not exist, or a parent is
    /// unreadable), so it cannot be watched or compared against the workdir.
    #[error("resolve {}", path.display())]
    Resolve {
        /// The path as given.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// The trust store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// Neither `$ONESHOT_TRUST_FILE`, `$XDG_DATA_HOME` nor `$HOME` is set.
    #[error(
        "locate the trust store: set ONESHOT_TRUST_FILE, XDG_DATA_HOME or HOME to say where it lives"
    )]
    NoLocation,
    /// The file to trust (or untrust) could not be read or resolved.
    #[error("read {}", path.display())]
    File {
        /// The policy file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The trust store itself could not be read or written.
    #[error("access the trust store {}", path.display())]
    Store {
        /// The trust store file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The trust store exists but is not a version 1 trust file; it is left untouched so that
    /// no trust decision is silently lost.
    #[error("parse the trust store {}: {message}; fix or remove it", path.display())]
    Corrupt {
        /// The trust store file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
}
