//! Workdir snapshots and recovery evidence. The snapshot is persisted so a resume after a
//! crash can still compare against it.

use super::{Engine, EngineError, Observer, Update};
use crate::executor::{DEFAULT_IGNORE_GLOBS, Snapshot, Stopped, recover_with};
use crate::process::{Evidence, StopReason};
use crate::session::ExitStatus;
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::path::Path;

/// Paths never counted as the worker's changes: oneshot's own state and git's internals.
pub(super) fn ignore_globs(workdir: &Path, state_dir: &Path) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    let mut patterns: Vec<String> = DEFAULT_IGNORE_GLOBS.iter().map(|g| g.to_string()).collect();
    let state_dir = state_dir
        .canonicalize()
        .unwrap_or_else(|_| state_dir.to_path_buf());
    if let Ok(rel) = state_dir.strip_prefix(workdir)
        && !rel.as_os_str().is_empty()
    {
        patterns.push(format!("{}/**", rel.display()));
    }
    for p in patterns {
        if let Ok(g) = Glob::new(&p) {
            b.add(g);
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

impl Engine {
    /// Takes and persists the before-snapshot of the workdir. Failing to take one is not fatal
    /// (recovery then reports no changes), but it is said.
    pub(super) fn snapshot_workdir(
        &mut self,
        observer: &mut dyn Observer,
    ) -> Result<(), EngineError> {
        let path = self.dir.snapshot_path();
        // Files named after a secret are stored under their redacted names.
        let names = Some(&*self.redactor);
        match Snapshot::take_with(&self.session.workdir, &self.ignore, names) {
            Ok(snap) => {
                let bytes = serde_json::to_vec(&snap).unwrap_or_default();
                // Like the state file: atomic now, durable with the step's sync.
                crate::store::replace(&path, &bytes).map_err(|source| {
                    crate::store::StoreError::Io {
                        what: "write",
                        path: path.display().to_string(),
                        source,
                    }
                })?;
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                let message = format!(
                    "the worker's changes will not be detected: {}",
                    crate::error::failure(&e)
                );
                self.warn_out_of_band(&message, observer)
            }
        }
    }

    /// What the stopped worker left: why it stopped, its codes, its output tail and the files
    /// it changed since the persisted snapshot.
    pub(super) fn gather_evidence(&self, reason: Option<StopReason>, exit: ExitStatus) -> Evidence {
        // Never blocks on what is not a regular file (a FIFO put in its place).
        let snapshot: Option<Snapshot> = crate::store::regular::read(&self.dir.snapshot_path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let stopped = Stopped {
            reason,
            exit_code: exit.code,
            signal: exit.signal,
        };
        let mut evidence = recover_with(
            stopped,
            self.session.worker_output.clone(),
            snapshot.as_ref(),
            &self.session.workdir,
            &self.ignore,
            Some(&*self.redactor),
        );
        evidence.transcript = self.worker_transcript().map(Box::new);
        evidence
    }

    /// What the worker agent's own transcript says, when the worker is an agent whose
    /// transcript oneshot reads (Claude Code, Codex, Gemini) and its path is known: journaled,
    /// or found from its session id (Gemini files it a moment after the session starts; state
    /// files from before paths were journaled).
    fn worker_transcript(&self) -> Option<crate::process::TranscriptFacts> {
        let agents = &self.session.agents;
        let kind = agents.worker.as_ref()?.kind;
        let read = kind.def().read_transcript?;
        let path = match &agents.worker_transcript {
            Some(p) => std::path::PathBuf::from(p),
            // Not journaled: where the CLI files it (Gemini a moment after the session
            // starts), from its session id.
            None => (kind.def().transcript)(
                std::path::Path::new(&self.session.workdir),
                agents.worker_session.as_deref()?,
            )?,
        };
        let mut facts = read(&path)?;
        facts.last_message = facts
            .last_message
            .map(|m| self.redactor.redact(&m).into_owned());
        Some(facts)
    }

    /// A warning that does not come from the decision core: recorded and shown.
    pub(super) fn warn_out_of_band(
        &mut self,
        message: &str,
        observer: &mut dyn Observer,
    ) -> Result<(), EngineError> {
        self.tell_out_of_band(message, true, observer)
    }

    /// A warning (or a note, when not `warning`) that does not come from the decision core:
    /// redacted, recorded and shown.
    pub(super) fn tell_out_of_band(
        &mut self,
        message: &str,
        warning: bool,
        observer: &mut dyn Observer,
    ) -> Result<(), EngineError> {
        let message = self.redactor.redact(message).into_owned();
        let text = crate::store::Message {
            ts: crate::pipeline::now_ms(),
            message: message.clone(),
        };
        let (record, update) = if warning {
            (
                crate::store::Record::Warning(text),
                Update::Warning(message),
            )
        } else {
            (crate::store::Record::Note(text), Update::Note(message))
        };
        self.write_record(record)?;
        observer.update(update);
        Ok(())
    }
}
