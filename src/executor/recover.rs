//! `recover()`: the facts about a stopped run that the salvage decision needs.

use std::path::Path;

use globset::GlobSet;

use super::{Evidence, Snapshot, StopReason};

/// How a run ended, as far as recovery cares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stopped {
    /// Why it stopped; `None` for a clean exit.
    pub reason: Option<StopReason>,
    /// Exit code, when known.
    pub exit_code: Option<i32>,
    /// Terminating signal, when known.
    pub signal: Option<i32>,
}

/// Gathers [`Evidence`] for the salvage decision: why the run stopped, its codes, the tail of
/// its (already redacted) output and the files it changed since `snapshot` (none known without
/// one: `changes_source` is then `"unavailable"`).
///
/// Never fails: if the change list cannot be computed, the error is logged, `changed_files` is
/// empty and `changes_source` is `"unavailable"`, so salvage still gets the rest.
pub fn recover(
    stopped: Stopped,
    output_tail: String,
    snapshot: Option<&Snapshot>,
    workdir: &Path,
    ignore: &GlobSet,
) -> Evidence {
    recover_with(stopped, output_tail, snapshot, workdir, ignore, None)
}

/// [`recover`] for a snapshot taken with [`Snapshot::take_with`] and these `names`.
pub fn recover_with(
    stopped: Stopped,
    output_tail: String,
    snapshot: Option<&Snapshot>,
    workdir: &Path,
    ignore: &GlobSet,
    names: super::snapshot::Names<'_>,
) -> Evidence {
    let changed = snapshot.map(|s| s.changed_files_with(workdir, ignore, names));
    let (changed_files, changes_source) = match changed {
        Some(Ok((files, source))) => (files, source.to_owned()),
        Some(Err(e)) => {
            tracing::warn!(
                "{}; the worker's changed files are unknown",
                crate::error::failure(&e)
            );
            (Vec::new(), "unavailable".to_owned())
        }
        None => (Vec::new(), "unavailable".to_owned()),
    };
    Evidence {
        reason: stopped.reason,
        exit_code: stopped.exit_code,
        signal: stopped.signal,
        output_tail,
        changed_files,
        changes_source,
        transcript: None,
    }
}
