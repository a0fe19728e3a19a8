//! Hot reload at transition boundaries: the slot swaps in a changed policy only between hook
//! calls; the engine records what happened and brings the state file in line.

use super::ctx::now_ms;
use super::{Engine, EngineError, Reporter};
use crate::pipeline::Redactor;
use crate::policy::ReloadEvent;
use crate::store::{LogWriter, PolicyRef};
use serde_json::json;
use std::sync::Arc;

impl Engine {
    /// Asks the slot for a changed policy (never during a hook call: this runs only between
    /// them), records what it found, and applies a new generation's limits from the next
    /// decision on.
    pub(super) fn refresh_policy(&mut self) -> Result<(), EngineError> {
        let events = self.slot.poll();
        for ev in &events {
            record_reload_event(ev, &mut self.log, &mut *self.reporter, &self.redactor)
                .map_err(|source| self.log_error(source))?;
        }
        let generation = self.slot.generation();
        if generation == self.file.policy.generation {
            return Ok(());
        }
        let host = self.slot.current();
        self.file.policy = PolicyRef {
            path: host.path().map(|p| p.to_path_buf()),
            hash: host.hash().to_string(),
            generation,
        };
        self.file.max_iterations = host.limits().max_iterations;
        match Redactor::from_env(host.redact_patterns()) {
            Ok(r) => self.redactor = Arc::new(r),
            // The policy validated, so this is unexpected; keep redacting with the old set.
            Err(e) => self.warn(&format!("keeping the previous redaction patterns: {e}"))?,
        }
        self.save()
    }
}

/// Writes the log record for a reload event and shows it. Shared with the output sink, which
/// polls while a process runs so a broken edit shows on the status line at once.
pub(super) fn record_reload_event(
    ev: &ReloadEvent,
    log: &mut LogWriter,
    reporter: &mut dyn Reporter,
    redactor: &Redactor,
) -> std::io::Result<()> {
    let files = |fs: &[std::path::PathBuf]| -> Vec<String> {
        fs.iter().map(|f| f.display().to_string()).collect()
    };
    let record = match ev {
        ReloadEvent::Reloaded {
            generation,
            hash,
            files: fs,
        } => json!({"ts": now_ms(), "type": ev.record_type(), "generation": generation,
                    "policy_hash": hash, "files": files(fs)}),
        ReloadEvent::Failed {
            error,
            files: fs,
            kept_generation,
        } => json!({"ts": now_ms(), "type": ev.record_type(), "message": redactor.redact(error),
                    "generation": kept_generation, "files": files(fs)}),
        ReloadEvent::Untrusted { file, hash, hint } => {
            json!({"ts": now_ms(), "type": ev.record_type(), "file": file.display().to_string(),
                   "hash": hash, "message": hint})
        }
    };
    log.append(&record)?;
    log.sync()?;
    match ev {
        ReloadEvent::Reloaded { .. } => reporter.note(&ev.to_string()),
        _ => reporter.warn(&ev.to_string()),
    }
    Ok(())
}
