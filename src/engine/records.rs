//! Writing the decision core's records (and the loop's own) to `oneshot-log.json`: every
//! string redacted, long ones moved into blob records, the reload slot's news recorded.

use super::{Engine, EngineError, Observer, Update};
use crate::pipeline::now_ms;
use crate::policy::ReloadEvent;
use crate::store::{PolicyReload, PolicyReloadFailed, PolicyUntrusted, Record, SessionRecord};

impl Engine {
    /// Appends `record`, redacted, with its long strings as blobs written just before it.
    pub(super) fn write_record(&mut self, mut record: Record) -> Result<(), EngineError> {
        if let Record::Session(SessionRecord { pid, .. }) = &mut record {
            *pid = Some(std::process::id());
        }
        let lines = self.blobber.encode(&record, &self.redactor).map_err(|e| {
            self.log_error(std::io::Error::other(format!(
                "cannot encode a record: {e}"
            )))
        })?;
        for line in &lines {
            self.log.append(line).map_err(|e| self.log_error(e))?;
        }
        Ok(())
    }

    /// Asks the reload slot for news (never during a hook call: the loop only runs between
    /// steps) and records it. Returns whether a new generation was swapped in.
    pub(super) fn poll_policy(&mut self, observer: &mut dyn Observer) -> Result<bool, EngineError> {
        let events = self.slot.poll();
        for ev in &events {
            let ts = now_ms();
            let files = |fs: &[std::path::PathBuf]| -> Vec<String> {
                fs.iter().map(|f| f.display().to_string()).collect()
            };
            let record = match ev {
                ReloadEvent::Reloaded {
                    generation,
                    hash,
                    files: fs,
                } => Record::PolicyReload(PolicyReload {
                    ts,
                    generation: *generation,
                    policy_hash: hash.clone(),
                    files: files(fs),
                }),
                ReloadEvent::Failed {
                    error,
                    files: fs,
                    kept_generation,
                } => Record::PolicyReloadFailed(PolicyReloadFailed {
                    ts,
                    message: error.clone(),
                    generation: *kept_generation,
                    files: files(fs),
                }),
                ReloadEvent::Untrusted { file, hash, hint } => {
                    Record::PolicyUntrusted(PolicyUntrusted {
                        ts,
                        file: file.display().to_string(),
                        hash: hash.clone(),
                        message: hint.clone(),
                    })
                }
            };
            self.write_record(record)?;
            let text = self.redactor.redact(&ev.to_string()).into_owned();
            observer.update(match ev {
                ReloadEvent::Reloaded { .. } => Update::Note(text),
                _ => Update::Warning(text),
            });
        }
        if !events.is_empty() {
            self.log.sync().map_err(|e| self.log_error(e))?;
        }
        let changed = self.slot.generation() != self.session.policy.generation;
        if changed {
            match crate::pipeline::Redactor::from_env(self.slot.current().redact_patterns()) {
                Ok(r) => self.redactor = std::sync::Arc::new(r),
                // The policy validated, so this is unexpected; keep redacting with the old set.
                Err(e) => {
                    let m = format!(
                        "keeping the previous redaction patterns: {}",
                        crate::error::failure(&e)
                    );
                    self.warn_out_of_band(&m, observer)?;
                }
            }
        }
        Ok(changed)
    }

    pub(super) fn log_error(&self, source: std::io::Error) -> EngineError {
        EngineError::Log {
            id: self.session.id.clone(),
            source,
        }
    }
}
