//! The front door of `job land` (the CLI's, a dashboard's): the job core allows the land
//! ([`JobEffect::Land`]), the git work is done here at the edge ([`Landing`]), and the core
//! judges its outcome ([`JobEvent::Landed`]) into one write with its audit entry — only if the
//! job has not moved meanwhile.

use crate::job::JobTrigger;
use crate::job::land::{LandFailure, LandOutcome};
use crate::job::record::Job;
use crate::job::step::{JobEffect, JobEvent, NoJudge, Step, StepError};
use crate::job::store::JobStore;
use crate::job::verbs::{GiveError, Giving, VerbContext, VerbError, decide, policy_hash};
use crate::job::workspace::{Landing, Rebase, WorkspaceError};

/// Why `land` landed nothing and recorded nothing (a land that failed on the job's merits —
/// a conflict, a failing check — is recorded instead: [`Land::Failed`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LandError {
    /// The verb does not apply, or the write was refused (the job moved, a runner holds it).
    #[error(transparent)]
    Give(#[from] GiveError),
    /// The job never got a workspace: there is nothing to land.
    #[error("job {id} has no workspace: nothing to land")]
    NoWorkspace {
        /// The job.
        id: String,
    },
    /// Git could not do its part (the remote unreachable, the base checked out with changes,
    /// the workspace not ready); nothing was landed and the job is as it was.
    #[error("land {id}: {source}")]
    Workspace {
        /// The job.
        id: String,
        /// What git said.
        #[source]
        source: Box<WorkspaceError>,
    },
}

/// What a land did, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub enum Land {
    /// The work landed: the job as it is now (its `landed` says where).
    Landed(Job),
    /// It did not; the job is INTERVENTION_REQUIRED with the evidence as its reason.
    Failed(Job, LandFailure),
}

impl Land {
    /// The job as the land left it.
    pub fn job(&self) -> &Job {
        match self {
            Land::Landed(j) | Land::Failed(j, _) => j,
        }
    }
}

/// Lands job `id` (an id or unique prefix) from `store`: the core allows it (a SUCCESS job
/// not landed yet, or one a failed land left in INTERVENTION_REQUIRED), the job's branch is
/// rebased onto its base, the checks run on the result ([`recheck`]), and the base is
/// fast-forwarded, or the branch pushed, or a plain copy's files copied back. A conflict or a
/// failing check leaves the base untouched and the job INTERVENTION_REQUIRED.
pub fn land(store: &dyn JobStore, id: &str, giving: &Giving) -> Result<Land, LandError> {
    land_with(store, id, giving, None)
}

/// Resolves a rebase's conflicts in the job's worktree, mid-rebase: an agent asked with the
/// `conflict-resolve` schema, at the edge, under the job's policy (its `permit` answers the
/// agent's tool requests).
pub trait Resolver {
    /// Resolves the conflicted `files` in `worktree` (`job`'s branch being rebased onto
    /// `onto`, in words) by editing them, and reports each file's path and action (`merged`,
    /// `kept_ours`, `kept_theirs`, `deleted`, `unresolved`); `Err` with why it could not.
    fn resolve(
        &mut self,
        job: &Job,
        worktree: &std::path::Path,
        onto: &str,
        files: &[String],
    ) -> Result<Vec<(String, String)>, String>;
}

/// How many commits in a row a resolver is asked about before the land gives up.
const RESOLVER_ROUNDS: usize = 50;

/// [`land`], with `resolver` asked about a rebase's conflicts: its report is checked against
/// git ([`Landing::check_resolution`]) before the rebase goes on; one that does not hold up
/// aborts the rebase and the land fails ([`LandFailure::Unresolved`]).
pub fn land_with(
    store: &dyn JobStore,
    id: &str,
    giving: &Giving,
    resolver: Option<&mut dyn Resolver>,
) -> Result<Land, LandError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let state_dir = crate::store::default_state_dir(&cwd, |k| std::env::var_os(k))
        .unwrap_or_else(|| cwd.join(".oneshot"));
    land_in(store, id, giving, resolver, &state_dir, None)
}

/// [`land_with`] from the machine whose state directory is `state_dir`: a job whose source
/// is a git remote is landed through this machine's mirror of it (`<state_dir>/mirrors/`),
/// rebased in a scratch worktree there, and the remote's base branch and the job's branch
/// pushed in one atomic push that refuses a base that moved meanwhile
/// ([`Landing::start`]).
pub fn land_in(
    store: &dyn JobStore,
    id: &str,
    giving: &Giving,
    mut resolver: Option<&mut dyn Resolver>,
    state_dir: &std::path::Path,
    seen: Option<&crate::job::verbs::Seen>,
) -> Result<Land, LandError> {
    let job = store.get(id).map_err(GiveError::from)?;
    let diff_hash = store
        .artifacts(&job.id)
        .map_err(GiveError::from)?
        .pop()
        .map(|a| a.diff_hash);
    // Bound to what the human saw, as every verb given from a page is.
    if let Some(seen) = seen {
        seen.still(&job, diff_hash.as_deref())
            .map_err(GiveError::from)?;
    }
    let cx = VerbContext {
        actor: giving.actor.clone(),
        now_ms: giving.now_ms,
        feedback: None,
        previous: None,
        diff_hash,
        policy_hash: policy_hash(&job),
    };
    let mut core = Step::new(job.clone(), cx.actor.clone());
    let asked = JobEvent::Verb {
        verb: JobTrigger::Land,
        cx: cx.clone(),
    };
    let fx = core
        .step(cx.now_ms, asked, &mut NoJudge)
        .map_err(verb_error)?;
    if !fx.contains(&JobEffect::Land) {
        return Err(GiveError::from(VerbError::NotAVerb {
            verb: JobTrigger::Land,
        })
        .into());
    }
    let Some(ws) = &job.workspace else {
        return Err(LandError::NoWorkspace { id: job.id });
    };
    let ws_error = |source| LandError::Workspace {
        id: job.id.clone(),
        source: Box::new(source),
    };
    let landing = Landing::start(&job.spec, ws, &job.id, state_dir).map_err(ws_error)?;
    let mut rebase = landing.rebase().map_err(ws_error)?;
    let mut rounds = 0;
    while let (Rebase::Conflicted(files), Some(r)) = (&rebase, resolver.as_deref_mut()) {
        rounds += 1;
        let problems = match r.resolve(&job, landing.worktree(), &landing.onto(), files) {
            Err(why) => vec![why],
            Ok(_) if rounds > RESOLVER_ROUNDS => {
                vec![format!("still conflicting after {RESOLVER_ROUNDS} commits")]
            }
            Ok(report) => landing.check_resolution(files, &report).map_err(ws_error)?,
        };
        if !problems.is_empty() {
            landing.abort().map_err(ws_error)?;
            rebase = Rebase::Unresolved(files.clone(), problems);
            break;
        }
        rebase = landing.continue_rebase().map_err(ws_error)?;
    }
    let outcome = match rebase {
        Rebase::Conflicted(files) => {
            // No resolver: the branch goes back to where it was, for a human to rebase.
            landing.abort().map_err(ws_error)?;
            LandOutcome::Failed(landing.conflict(files))
        }
        Rebase::Unresolved(files, problems) => LandOutcome::Failed(LandFailure::Unresolved {
            onto: landing.onto(),
            files,
            worktree: landing.worktree().to_path_buf(),
            problems,
        }),
        Rebase::SourceChanged(files) => LandOutcome::Failed(LandFailure::SourceChanged {
            path: job.spec.source.clone(),
            files,
        }),
        Rebase::Clean => match recheck(&job, &landing) {
            Err(failure) => LandOutcome::Failed(failure),
            Ok(()) => {
                let (target, commits) = landing.publish().map_err(ws_error)?;
                LandOutcome::Landed { target, commits }
            }
        },
    };
    let failure = match &outcome {
        LandOutcome::Failed(f) => Some(f.clone()),
        _ => None,
    };
    let done = JobEvent::Landed { outcome, cx };
    let fx = core
        .step(giving.now_ms, done, &mut NoJudge)
        .map_err(verb_error)?;
    let Some(JobEffect::Decide(w)) = fx.into_iter().next() else {
        return Err(GiveError::from(VerbError::NotAVerb {
            verb: JobTrigger::Land,
        })
        .into());
    };
    decide(store, &job, &core.job, &w)?;
    Ok(match failure {
        Some(f) => Land::Failed(core.job, f),
        None => Land::Landed(core.job),
    })
}

/// Re-runs the checks on the rebased result in `landing.worktree()`, before anything outside
/// the job's workspace changes: the one place `job land` runs them — the job policy's `checks`,
/// then the job's own (`--check`), as its sessions ran them. A failing check is the land's
/// failure ([`LandFailure::Check`]), and the base stays untouched; so is a policy that cannot
/// say what its checks are.
fn recheck(job: &Job, landing: &Landing) -> Result<(), LandFailure> {
    let failed = |name: &str, status: String| LandFailure::Check {
        name: name.to_string(),
        status,
        tail: String::new(),
    };
    let policy = crate::policy::PolicyHost::load_or_builtin(
        job.spec.policy.as_deref(),
        crate::policy::PolicyOptions::default(),
    )
    .map_err(|e| failed("the policy's checks", crate::error::failure(&e)))?;
    let ctx = crate::policy::HookCtx {
        session_id: job.id.clone(),
        task: job.spec.task.clone(),
        workdir: landing.worktree().display().to_string(),
        ..crate::policy::HookCtx::default()
    };
    let listed = policy
        .checks(&ctx)
        .map_err(|e| failed("the policy's checks", crate::error::failure(&e)))?;
    let checks = crate::check::merge(&listed, &job.spec.checks);
    if checks.is_empty() {
        return Ok(());
    }
    let redactor = crate::pipeline::Redactor::from_env(policy.redact_patterns())
        .map_err(|e| failed("checks", crate::error::failure(&e)))?;
    // An id of their own: whatever still carries it when a check ends is swept.
    let id = format!("{}-land", job.id);
    let results = crate::check::run_here(
        &checks,
        landing.worktree(),
        &id,
        &std::sync::Arc::new(redactor),
    )
    .map_err(|e| failed("checks", format!("could not run them: {e}")))?;
    match crate::check::first_failure(&results) {
        None => Ok(()),
        Some(r) => Err(LandFailure::Check {
            name: r.name.clone(),
            status: r.status(),
            tail: r.short_tail().to_string(),
        }),
    }
}

fn verb_error(e: StepError) -> LandError {
    match e {
        StepError::Verb(v) => GiveError::from(v).into(),
        _ => GiveError::from(VerbError::NotAVerb {
            verb: JobTrigger::Land,
        })
        .into(),
    }
}
