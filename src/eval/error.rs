//! Why an eval could not run: everything here is the manifest's or the caller's fault, found
//! before any target ran (a failing case is a result, not an error).

use std::path::PathBuf;

/// Why [`super::load`] or [`super::run`] refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The manifest could not be read.
    #[error("could not read the manifest {}: {source}", .path.display())]
    Read {
        /// The manifest.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The manifest, or one of its cases, is wrong: `file:line: case "id": what`.
    #[error("{}{}: {}{message}", .path.display(), .line.map(|l| format!(":{l}")).unwrap_or_default(), .case.as_ref().map(|c| format!("case {c:?}: ")).unwrap_or_default())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// The line, when known (1-based).
        line: Option<usize>,
        /// The case's id, when the problem is in one.
        case: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// Neither the caller nor the manifest names a target.
    #[error(
        "{}: no target: pass --target AGENT[:MODEL] or --target-cmd CMDLINE, or set `target:` or `target_cmd:` in the manifest",
        .0.display()
    )]
    NoTarget(PathBuf),
    /// A golden file could not be written (`--update`).
    #[error("could not write the golden file {}: {source}", .path.display())]
    Write {
        /// The golden file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
