//! `recover()`: the facts about a stopped run that the salvage decision needs.

use std::path::Path;

use globset::GlobSet;

use super::{Evidence, RunOutcome, Snapshot, StopReason};

/// How a run ended, as far as recovery cares. Built from a [`RunOutcome`], or with
/// [`Stopped::oneshot_died`] when oneshot itself died and there is no outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    /// Why it stopped.
    pub reason: StopReason,
    /// Exit code, when known.
    pub exit_code: Option<i32>,
    /// Terminating signal, when known.
    pub signal: Option<i32>,
}

impl Stopped {
    /// oneshot was killed while the agent ran: no exit status was ever observed.
    pub fn oneshot_died() -> Self {
        Self {
            reason: StopReason::OneshotDied,
            exit_code: None,
            signal: None,
        }
    }
}

impl From<&RunOutcome> for Stopped {
    fn from(outcome: &RunOutcome) -> Self {
        Self {
            reason: outcome.reason(),
            exit_code: outcome.exit_code,
            signal: outcome.signal,
        }
    }
}

/// Gathers [`Evidence`] for the salvage decision: why the run stopped, its codes, the tail of
/// its (already redacted) output and the files it changed since `snapshot`.
///
/// Never fails: if the change list cannot be computed, the error is logged, `changed_files` is
/// empty and `changes_source` is `"unavailable"`, so salvage still gets the rest.
pub fn recover(
    stopped: impl Into<Stopped>,
    output_tail: String,
    snapshot: &Snapshot,
    workdir: &Path,
    ignore: &GlobSet,
) -> Evidence {
    let stopped = stopped.into();
    let (changed_files, changes_source) = match snapshot.changed_files(workdir, ignore) {
        Ok((files, source)) => (files, source.to_owned()),
        Err(e) => {
            tracing::warn!(workdir = %workdir.display(), error = %e, "could not list changed files");
            (Vec::new(), "unavailable".to_owned())
        }
    };
    Evidence {
        reason: Some(stopped.reason),
        exit_code: stopped.exit_code,
        signal: stopped.signal,
        output_tail,
        changed_files,
        changes_source,
    }
}
