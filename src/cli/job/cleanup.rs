//! `job cleanup`: the runner operation that removes a finished job's workspace — only when
//! its work cannot be lost (merged or pushed somewhere), or when told to discard it; a branch
//! with commits found nowhere else is kept even then.

use super::{Cx, refused, store_error};
use anyhow::Result;
use clap::Args;
use oneshot::job::record::{AuditEntry, Job, Workspace};
use oneshot::job::verbs;
use oneshot::job::workspace::{self, Cleanup};

/// Options of `job cleanup`.
#[derive(Debug, Args)]
pub struct CleanupArgs {
    /// Job id or unique prefix.
    #[arg(add = clap_complete::engine::ArgValueCandidates::new(crate::cli::complete::jobs))]
    pub id: String,
    /// Remove the workspace even though its work is not merged anywhere (the job's branch is
    /// still kept while it has commits found nowhere else).
    #[arg(long)]
    pub discard: bool,
}

/// Removes job `id`'s workspace if that loses nothing (or `--discard`).
pub fn run(cx: &Cx, a: CleanupArgs) -> Result<i32> {
    let store = cx.store()?;
    let job = store
        .get(&a.id)
        .map_err(|e| store_error(&format!("clean up {}", a.id), e))?;
    verbs::may_clean_up(&job).map_err(|e| refused(e.to_string()))?;
    let Some(ws) = &job.workspace else {
        // A job canceled before its first step may still hold the base `job create
        // --include-uncommitted` made; nothing else will ever let it go.
        if let Ok(workspace::SourceKind::Git { root }) = workspace::check_source(&job.spec) {
            let _ = workspace::forget_base(&job.id, &root);
        }
        outln!("{}: no workspace to remove", job.id);
        return Ok(crate::cli::exit::OK);
    };
    match workspace::cleanup_job(&job.spec, ws, a.discard, job.landed.is_some())? {
        Cleanup::Removed { note } => {
            // Removing the workspace is a human's decision (a discard loses work for good):
            // it goes in the audit trail. A refused cleanup changed nothing and is not.
            let entry = audit_entry(&job, ws, a.discard, note.as_deref());
            let recorded = store.record(&super::sealed(&job, &entry)?);
            outln!("{}: removed {}", job.id, ws.path.display());
            if let Some(note) = note {
                outln!("{}: {note}", job.id);
            }
            recorded.map_err(|e| store_error(&format!("record the cleanup of {}", job.id), e))?;
            Ok(crate::cli::exit::OK)
        }
        // The library says what would be lost; the flag that loses it anyway is the CLI's.
        Cleanup::Kept { reason } => Err(refused(format!(
            "clean up {id}: kept {}: {reason}; to discard it, run `oneshot job cleanup {id} \
             --discard`",
            ws.path.display(),
            id = job.id,
        ))),
    }
}

/// The audit entry of a cleanup that removed `ws`: who, when, what went, and whether it was a
/// discard (work not merged anywhere may be gone with it).
fn audit_entry(job: &Job, ws: &Workspace, discard: bool, note: Option<&str>) -> AuditEntry {
    let mut m = serde_json::Map::new();
    m.insert("state".into(), job.state().as_str().into());
    m.insert("path".into(), ws.path.display().to_string().into());
    if let Some(branch) = &ws.branch {
        m.insert("branch".into(), branch.clone().into());
    }
    m.insert("discard".into(), discard.into());
    if let Some(note) = note {
        m.insert("kept".into(), note.into());
    }
    AuditEntry::job(
        &job.id,
        oneshot::job::record::AuditAction::Cleanup,
        &verbs::actor(),
        super::now_ms(),
        m,
    )
}
