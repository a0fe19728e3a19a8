//! The human verbs: `activate`, `approve`, `reject`, `resubmit`, `suspend`, `resume`,
//! `cancel`: arguments mapped to `oneshot::job::verbs::give`, which judges the verb and writes
//! it only if the job has not moved meanwhile.

use super::now_ms;
use super::{Cx, paint, refused, store_error};
use crate::cli::exit::{self, usage};
use anyhow::Result;
use clap::Args;
use oneshot::job::verbs::{self, GiveError, Giving, VerbError};
use oneshot::job::{JobState, JobTrigger};
use std::sync::Arc;

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

/// Gives `verb` to job `id` (`oneshot::job::verbs::give`) and prints the move.
pub fn run(cx: &Cx, id: &str, verb: JobTrigger, feedback: Option<String>) -> Result<i32> {
    let store = cx.store()?;
    let giving = Giving {
        actor: verbs::actor(),
        feedback,
        now_ms: now_ms(),
    };
    let given = verbs::give(&*store, id, verb, &giving).map_err(|e| match e {
        // "failed to approve: job-1a2b3c4d: approve is not allowed in PENDING; …"
        GiveError::Verb(VerbError::Refused { id, refused: r }) => {
            refused(format!("{verb}: {id}: {r}"))
        }
        GiveError::Verb(VerbError::NoFeedback { id }) => usage(format!(
            "reject {id}: --feedback TEXT is required: the critique is what the next attempt is \
             told (PREVIOUS ATTEMPT / CRITIQUE / INSTRUCTION)"
        )),
        GiveError::Verb(e) => usage(format!("{verb} {id}: {e}")),
        GiveError::Store(e) => store_error(&format!("{verb} {id}"), e),
        e => anyhow::anyhow!("{verb} {id}: {e}"),
    })?;
    let job = &given.job;
    if let Some(def) = &cx.notify {
        oneshot::notify::after_verb(def, &giving.actor, Arc::clone(&store), &job.id);
    }
    if !cx.quiet {
        outln!("{}: {} → {}", job.id, paint(given.from), paint(job.state()));
    } else {
        outln!("{}", job.state());
    }
    if job.state() == JobState::Pending && !cx.quiet {
        errln!("  `oneshot job step {}` runs its next step", job.id);
    }
    Ok(exit::OK)
}
