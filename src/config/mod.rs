//! Configuration files: `oneshot.toml` in the project and `config.toml` in the user's config
//! directory. Their keys mirror the long command-line flags (`worker-cmd`, `max-iterations`,
//! …); the command line decides what wins (flags, then the project file, then the user file,
//! then the environment, then the defaults) — this module only finds, reads and checks the
//! files, so every error names `file:line`.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("oneshot.toml");
//! std::fs::write(&path, "max-iterations = 3\npolicy = \"policies/strict.lua\"\n").unwrap();
//! let file = oneshot::config::ConfigFile::load(&path).unwrap();
//! let policy = file.get(oneshot::config::Key::Policy).unwrap();
//! assert_eq!(policy.line, 2);
//! // Relative paths are relative to the file's directory.
//! assert_eq!(
//!     policy.value,
//!     oneshot::config::Value::Path(dir.path().join("policies/strict.lua"))
//! );
//! ```

mod error;
mod file;
mod find;
mod key;
mod notify;
mod target;

pub use crate::paths::{PROJECT_FILE, find_project_file, project_root};
pub use error::ConfigError;
pub use file::{ConfigFile, Entry, Value};
pub use find::user_file;
pub use key::{KEYS, Key};
pub use notify::{DEFAULT_SINK_TIMEOUT, NotifyDef, SinkDef, SinkTo};
pub use target::{Runs, TargetDef};

/// `on`/`off` as a setting's value (also `true`/`false`, `yes`/`no`, `1`/`0`; any case).
pub fn switch(word: &str) -> Option<bool> {
    match word.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Some(true),
        "off" | "false" | "no" | "0" => Some(false),
        _ => None,
    }
}
