//! The registry: the built-in schemas plus a directory of the user's own (`NAME.json`, asked
//! for as `NAME`), and resolving `LABEL|FILE` to a schema.
//!
//! A user file may not replace a built-in: `.oneshot/schemas/verdict.json` is refused (the
//! built-in is used, and `oneshot schema list` and `check` report the file). The built-ins are
//! contracts oneshot itself reads — the verdict decides how a session ends — and the registry
//! sits in the project, where an agent can write. A variant goes under another name, or is
//! named by its path.

use super::builtin::{BUILTINS, Builtin, builtin};
use super::{Schema, SchemaError};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The registry directory under a project's root.
pub const PROJECT_DIR: &str = ".oneshot/schemas";

/// The environment variable naming the registry directory (like `--registry`).
pub const ENV: &str = "ONESHOT_SCHEMAS";

/// Where a schema comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Compiled into oneshot.
    Builtin,
    /// A file in the registry directory.
    User(PathBuf),
    /// A file named by its path.
    File(PathBuf),
}

impl Origin {
    /// `builtin`, or the file's path.
    pub fn describe(&self) -> String {
        match self {
            Origin::Builtin => "builtin".into(),
            Origin::User(p) | Origin::File(p) => p.display().to_string(),
        }
    }
}

/// A schema file in the registry directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserFile {
    /// Its label: the file name without `.json`.
    pub label: String,
    /// The file.
    pub path: PathBuf,
}

/// A file in the registry directory that is not used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The file.
    pub path: PathBuf,
    /// Why it is not used.
    pub why: String,
}

/// The built-in schemas and, when there is one, a directory of the user's.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    dir: Option<PathBuf>,
    user: Vec<UserFile>,
    refused: Vec<Refused>,
}

impl Registry {
    /// The built-in schemas alone.
    pub fn builtin() -> Self {
        Registry::default()
    }

    /// The built-ins and the `*.json` files in `dir`; a directory that does not exist holds
    /// none. Files are only listed here; each is read when it is resolved or checked.
    pub fn open(dir: &Path) -> Result<Self, SchemaError> {
        let mut registry = Registry {
            dir: Some(dir.to_path_buf()),
            ..Registry::default()
        };
        let read = |source| SchemaError::Read {
            path: dir.to_path_buf(),
            source,
        };
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(registry),
            Err(e) => return Err(read(e)),
        };
        let mut paths = Vec::new();
        for entry in entries {
            let path = entry.map_err(read)?.path();
            if path.extension().is_some_and(|e| e == "json") && path.is_file() {
                paths.push(path);
            }
        }
        paths.sort();
        for path in paths {
            let label = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !valid_label(&label) {
                registry.refused.push(Refused {
                    path,
                    why: format!(
                        "{label:?} is not a label: use letters, digits, '-' and '_', \
                         starting with a letter or digit"
                    ),
                });
            } else if builtin(&label).is_some() {
                registry.refused.push(Refused {
                    path,
                    why: format!(
                        "a built-in schema is labelled {label:?} and built-ins are not \
                         replaced; rename the file"
                    ),
                });
            } else {
                registry.user.push(UserFile { label, path });
            }
        }
        Ok(registry)
    }

    /// The registry directory: `explicit` (`--registry`), else `$ONESHOT_SCHEMAS`, else
    /// `.oneshot/schemas` under the project `cwd` belongs to (the directory holding
    /// `oneshot.toml`, else the git root, else `cwd`; see [`crate::paths::project_root`]).
    pub fn locate(
        explicit: Option<&Path>,
        var: impl Fn(&str) -> Option<OsString>,
        cwd: &Path,
    ) -> PathBuf {
        if let Some(dir) = explicit {
            return dir.to_path_buf();
        }
        match var(ENV) {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => crate::paths::project_root(cwd).join(PROJECT_DIR),
        }
    }

    /// The user directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The built-in schemas.
    pub fn builtins(&self) -> &'static [Builtin] {
        BUILTINS
    }

    /// The user's schemas, by label.
    pub fn user(&self) -> &[UserFile] {
        &self.user
    }

    /// Files in the directory that are not used: a built-in's label, or a name that is not a
    /// label.
    pub fn refused(&self) -> &[Refused] {
        &self.refused
    }

    /// Every label, built-ins first.
    pub fn labels(&self) -> Vec<&str> {
        BUILTINS
            .iter()
            .map(|b| b.label)
            .chain(self.user.iter().map(|u| u.label.as_str()))
            .collect()
    }

    /// `LABEL|FILE`: a spec with a `/` or ending in `.json` is a file, anything else a label
    /// (built-in first, then the user's).
    pub fn resolve(&self, spec: &str) -> Result<Schema, SchemaError> {
        if is_path(spec) {
            let path = PathBuf::from(spec);
            return Schema::from_file(&path, spec, Origin::File(path.clone()));
        }
        if let Some(b) = builtin(spec) {
            return Ok(Schema::from_builtin(b));
        }
        if let Some(u) = self.user.iter().find(|u| u.label == spec) {
            return Schema::from_file(&u.path, &u.label, Origin::User(u.path.clone()));
        }
        Err(SchemaError::UnknownLabel {
            label: spec.to_string(),
            known: self.labels().join(", "),
        })
    }
}

/// Whether a `LABEL|FILE` spec names a file.
pub fn is_path(spec: &str) -> bool {
    spec.contains(std::path::MAIN_SEPARATOR) || spec.contains('/') || spec.ends_with(".json")
}

/// Letters, digits, `-` and `_`, starting with a letter or digit: safe in a file name, a
/// command line and a manifest.
fn valid_label(label: &str) -> bool {
    label
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}
