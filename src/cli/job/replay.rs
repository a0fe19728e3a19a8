//! `oneshot job replay ID [--policy FILE]`: what a policy would have decided where the job's
//! policy decided, through the job core's own rules (`oneshot::job::replay`).

use super::{Cx, store_error};
use crate::cli::exit;
use anyhow::{Context, Result};
use clap::Args;
use oneshot::policy::{PolicyHost, PolicyOptions};
use std::path::PathBuf;

/// Options of `job replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Job id or unique prefix.
    #[arg(add = clap_complete::engine::ArgValueCandidates::new(crate::cli::complete::jobs))]
    pub id: String,
    /// The policy to ask [default: the job's own policy as it is now, so a replay shows what
    /// an edit since changed].
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Print one JSON object: each decision recorded and replayed, and the verdict.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when a decision would have sent the job elsewhere.
    #[arg(long)]
    pub exit_code: bool,
}

/// Replays the job's decisions under the policy and prints the report.
pub fn run(cx: &Cx, a: ReplayArgs) -> Result<i32> {
    let store = cx.store()?;
    let job = oneshot::job::store::Jobs::get(&*store, &a.id)
        .map_err(|e| store_error(&format!("replay job {}", a.id), e))?;
    let path = a.policy.clone().or_else(|| job.spec.policy.clone());
    // Replaying runs the policy's hooks in its sandbox and starts no agent, like `policy
    // replay`: no trust is needed to ask it.
    let shown = match &path {
        Some(p) => p.display().to_string(),
        None => "the built-in policy".to_string(),
    };
    let mut host = PolicyHost::load_or_builtin(path.as_deref(), PolicyOptions::default())
        .map_err(|e| exit::usage(format!("{e}")))
        .with_context(|| format!("load the policy {shown}"))?;
    let report = oneshot::job::replay::replay(&*store, &job.id, &mut host)
        .map_err(|e| store_error(&format!("replay job {}", job.id), e))?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        outln!(
            "job {} — {} decision(s) asked again of {shown}",
            report.job_id,
            report.decisions.len()
        );
        out!("{}", report.render());
    }
    Ok(if a.exit_code && report.differs() {
        exit::FAILED
    } else {
        exit::OK
    })
}
