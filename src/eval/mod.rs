//! Evals (seed 002 §Integration Testing): a YAML manifest of cases — a prompt or a captured
//! file, the schema its answer must fit, and what the answer must say — each asked k times
//! through [`crate::ask::ask`]; a case passes only if all k answers say it (pass^k), which
//! catches the classification that is right two times in three.
//!
//! ```no_run
//! # async fn demo() -> Result<(), oneshot::eval::EvalError> {
//! use oneshot::ask::Target;
//! use oneshot::eval::{Options, load, run};
//! use oneshot::schema::Registry;
//! let manifest = load("evals/manifest.yaml".as_ref(), &Registry::builtin(), false)?;
//! let mut opts = Options::new(std::env::current_dir().unwrap());
//! opts.target = Some(Target::Command("sh classify.sh".into()));
//! let report = run(&manifest, &opts).await?;
//! print!("{}", report.table());
//! # Ok(())
//! # }
//! ```

mod error;
mod expect;
mod manifest;
mod report;

pub use error::EvalError;
pub use expect::Expect;
pub use manifest::{Case, Manifest, ManifestTarget, load};

pub(crate) use manifest::DEFAULT_K;
pub use report::{CaseReport, Count, Report, RunReport, Status};

use crate::agent::AgentSpec;
use crate::ask::{Ask, Target};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How to run a manifest.
#[derive(Debug, Clone)]
pub struct Options {
    /// Who answers; `None`: the manifest's `target`/`target_cmd`.
    pub target: Option<Target>,
    /// Where [`Options::target`] runs (a manifest's own target runs in the manifest's
    /// directory, so that `target_cmd: sh classify.sh` finds the script beside it).
    pub dir: PathBuf,
    /// Runs per case; `None`: the manifest's `k`, else 3.
    pub k: Option<u32>,
    /// Cases run at once (at least 1); a case's own k runs are one after another.
    pub parallel: usize,
    /// How long one run may take ([`Ask::timeout`]).
    pub timeout: Duration,
    /// Runs per answer until one fits the schema ([`Ask::attempts`]).
    pub attempts: u32,
    /// Write each golden case's file from its k answers, when they agree.
    pub update: bool,
    /// Environment added for [`Options::target`] (a named target's, secrets resolved).
    pub env: Vec<(String, String)>,
}

impl Options {
    /// The defaults: the manifest's target and k, one case at a time, [`Ask`]'s timeout and
    /// attempts, no update; a target given later runs in `dir`.
    pub fn new(dir: PathBuf) -> Options {
        Options {
            target: None,
            dir,
            k: None,
            parallel: 1,
            timeout: crate::ask::DEFAULT_TIMEOUT,
            attempts: crate::ask::DEFAULT_ATTEMPTS,
            update: false,
            env: Vec::new(),
        }
    }
}

/// Runs every case of `manifest` k times, up to [`Options::parallel`] cases at once, and judges
/// them. A run that fails (no answer, a timeout) is a failed case, not an error; errors are a
/// missing target and a golden file that cannot be written.
pub async fn run(manifest: &Manifest, opts: &Options) -> Result<Report, EvalError> {
    let (target, dir) = match (&opts.target, &manifest.target) {
        (Some(t), _) => (t.clone(), opts.dir.clone()),
        (None, Some(ManifestTarget::Command(c))) => {
            (Target::Command(c.clone()), manifest.dir.clone())
        }
        (None, Some(ManifestTarget::Agent(a))) => {
            let spec = AgentSpec::parse(a).map_err(|e| EvalError::Manifest {
                path: manifest.path.clone(),
                line: None,
                case: None,
                message: format!("target: {e}"),
            })?;
            (Target::Agent(spec), manifest.dir.clone())
        }
        (None, None) => return Err(EvalError::NoTarget(manifest.path.clone())),
    };
    let k = opts.k.or(manifest.k).unwrap_or(DEFAULT_K).max(1);
    let slots = Arc::new(tokio::sync::Semaphore::new(opts.parallel.max(1)));
    let mut set = tokio::task::JoinSet::new();
    for (i, case) in manifest.cases.iter().enumerate() {
        let ask = Ask {
            target: target.clone(),
            schema: case.schema.clone(),
            prompt: case.prompt.clone(),
            timeout: opts.timeout,
            dir: dir.clone(),
            attempts: opts.attempts,
            env: opts.env.clone(),
            sandbox: true,
            hidden: Vec::new(),
            permit: None,
            role: crate::process::Role::Auditor,
        };
        let slots = Arc::clone(&slots);
        set.spawn(async move {
            // The semaphore is never closed, so a permit always comes.
            let _slot = slots.acquire_owned().await;
            let mut results = Vec::with_capacity(k as usize);
            for _ in 0..k {
                results.push(crate::ask::ask(&ask).await);
            }
            (i, results)
        });
    }
    let mut results: Vec<Option<_>> = manifest.cases.iter().map(|_| None).collect();
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((i, r)) => results[i] = Some(r),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    let mut cases = Vec::with_capacity(results.len());
    for (case, r) in manifest.cases.iter().zip(results) {
        cases.push(CaseReport::judge(case, r.unwrap_or_default(), opts.update)?);
    }
    let passed = cases.iter().filter(|c| c.status == Status::Pass).count();
    Ok(Report {
        manifest: manifest.path.display().to_string(),
        k,
        passed,
        failed: cases.len() - passed,
        cases,
    })
}
