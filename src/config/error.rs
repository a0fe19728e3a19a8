//! What goes wrong with a config file, in the crate's voice (see [`crate::error`]).

use std::path::PathBuf;

/// A config file that cannot be used. Each message reads after "failed to …" and names the
/// file (and line, when there is one).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("read config {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML, or a key or value is wrong: `message` says which and what
    /// to write instead.
    #[error("load config {}:{line}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// What is wrong there.
        message: String,
    },
}
