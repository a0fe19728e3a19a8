//! The human verbs: `activate`, `approve`, `reject`, `resubmit`, `suspend`, `resume`,
//! `cancel`. Each reads the job, lets `oneshot::job::verbs::apply` judge and apply the verb,
//! and writes the result with `JobStore::decide`, which refuses it if the job moved meanwhile.

use super::now_ms;
use super::{Cx, paint, refused, store_error};
use crate::cli::exit::{self, usage};
use anyhow::Result;
use clap::Args;
use oneshot::job::record::Job;
use oneshot::job::store::{Decision, JobStore as _};
use oneshot::job::verbs::{self, VerbContext, VerbError};
use oneshot::job::{JobState, JobTrigger};
use oneshot::policy::{PolicyHost, PolicyOptions};

/// Options of `job reject`.
#[derive(Debug, Args)]
pub struct RejectArgs {
    /// Job id or unique prefix.
    #[arg(add = clap_complete::engine::ArgValueCandidates::new(crate::cli::complete::jobs))]
    pub id: String,
    /// The critique: what the next attempt is told was wrong (required).
    #[arg(long, value_name = "TEXT")]
    pub feedback: Option<String>,
}

/// Applies `verb` to job `id` and prints the move.
pub fn run(cx: &Cx, id: &str, verb: JobTrigger, feedback: Option<String>) -> Result<i32> {
    let store = cx.store()?;
    let doing = format!("{verb} {id}");
    let job = store.get(id).map_err(|e| store_error(&doing, e))?;
    let doing = format!("{verb} {}", job.id);
    let latest = store
        .artifacts(&job.id)
        .map_err(|e| store_error(&doing, e))?
        .pop();
    let vcx = VerbContext {
        actor: verbs::actor(),
        now_ms: now_ms(),
        feedback,
        previous: latest.as_ref().map(|a| {
            let stat = if a.diff_stat.trim().is_empty() {
                "no changes".to_string()
            } else {
                a.diff_stat.trim().to_string()
            };
            match a.final_message.trim() {
                "" => format!("(the worker said nothing; diff: {stat})"),
                said => format!("{said}\n(diff: {stat})"),
            }
        }),
        diff_hash: latest.as_ref().map(|a| a.diff_hash.clone()),
        policy_hash: policy_hash(&job),
    };
    let (moved, transition, audit) = verbs::apply(&job, verb, &vcx).map_err(|e| match e {
        // "failed to approve: job-1a2b3c4d: approve is not allowed in PENDING; …"
        VerbError::Refused { id, refused: r } => refused(format!("{verb}: {id}: {r}")),
        VerbError::NoFeedback { id } => usage(format!(
            "reject {id}: --feedback TEXT is required: the critique is what the next attempt is \
             told (PREVIOUS ATTEMPT / CRITIQUE / INSTRUCTION)"
        )),
        e => usage(format!("{verb} {}: {e}", job.id)),
    })?;
    // Cancel takes the job from a runner mid-step: its lease is revoked, and its next
    // heartbeat fails and stops its session.
    let revoke = verb == JobTrigger::Cancel && !job.state.is_resting();
    store
        .decide(&Decision {
            job: &super::sealed(&job, &moved)?,
            expected: job.state,
            transition: &super::sealed(&job, &transition)?,
            audit: &super::sealed(&job, &audit)?,
            revoke,
        })
        .map_err(|e| store_error(&doing, e))?;
    if !cx.quiet {
        outln!("{}: {} → {}", job.id, paint(job.state), paint(moved.state));
    } else {
        outln!("{}", moved.state);
    }
    if moved.state == JobState::Pending && !cx.quiet {
        errln!("  `oneshot job step {}` runs its next step", job.id);
    }
    Ok(exit::OK)
}

/// The hash of the job's policy as it is now (the file, or the built-in), for the audit trail:
/// which policy version the human confirmed or overruled. `None` when it no longer loads.
pub fn policy_hash(job: &Job) -> Option<String> {
    match &job.spec.policy {
        Some(p) => PolicyHost::load(p, PolicyOptions::default())
            .ok()
            .map(|h| h.hash().to_string()),
        None => Some(PolicyHost::builtin().hash().to_string()),
    }
}
