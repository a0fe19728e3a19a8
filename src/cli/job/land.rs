//! `job land ID…` and `job approve ID… [--land]`: several jobs at once, each reported on its
//! own line (or as one JSON object per line), the exit status non-zero if any did not land or
//! was not approved. Thin over `oneshot::job::landing::land` and `oneshot::job::verbs::give`.

use super::{Cx, now_ms, paint};
use crate::cli::exit;
use anyhow::Result;
use clap::Args;
use oneshot::job::land::{LandTarget, Landed, short};
use oneshot::job::landing::{self, Land, LandError};
use oneshot::job::verbs::{self, GiveError, Giving, VerbError};
use oneshot::job::{JobState, JobTrigger};
use serde_json::json;

/// Options of `job land`.
#[derive(Debug, Args)]
pub struct LandArgs {
    /// Job ids (or unique prefixes): SUCCESS jobs, or jobs a failed land left in
    /// INTERVENTION_REQUIRED once you fixed them in their workspace.
    #[arg(required = true, value_name = "ID", add = clap_complete::engine::ArgValueCandidates::new(crate::cli::complete::jobs))]
    pub ids: Vec<String>,
    /// Print one JSON object per job, one per line (docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Ask this agent (`claude`, `codex:MODEL`), `[targets.NAME]` of oneshot.toml or command
    /// (`cmd:COMMAND`) to resolve a rebase's conflicts, with the conflict-resolve schema; its
    /// report is checked against git before the land goes on. An agent may edit files inside
    /// the job's worktree (the job's policy `permit`, asked as a worker, decides when it has
    /// one) [default: the `resolver` of the job's policy, else none: a conflict needs a human].
    #[arg(long, value_name = "AGENT|NAME|cmd:COMMAND")]
    pub resolver: Option<String>,
}

/// Options of `job approve`.
#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// Job ids (or unique prefixes) in APPROVAL_REQUIRED.
    #[arg(required = true, value_name = "ID", add = clap_complete::engine::ArgValueCandidates::new(crate::cli::complete::jobs))]
    pub ids: Vec<String>,
    /// Land each approved job too, as `oneshot job land` does.
    #[arg(long)]
    pub land: bool,
    /// With --land: the resolver of `oneshot job land --resolver`.
    #[arg(long, value_name = "AGENT|NAME|cmd:COMMAND", requires = "land")]
    pub resolver: Option<String>,
}

/// `job land ID…`.
pub fn land(cx: &Cx, a: LandArgs) -> Result<i32> {
    let store = cx.store()?;
    let mut code = exit::OK;
    for id in ordered(&*store, &a.ids) {
        code = code.max(land_one(cx, &store, &id, a.json, a.resolver.as_deref()));
    }
    Ok(code)
}

/// `ids` in the order that lands the most of them without conflicts: jobs whose changes
/// overlap no other's first (`oneshot::job::overlap::land_order`, by each job's latest
/// artifact); an id that names no job keeps its place, for `land` to report.
fn ordered(store: &dyn oneshot::job::JobStore, ids: &[String]) -> Vec<String> {
    let files = |id: &str| -> Vec<String> {
        let Ok(job) = store.get(id) else {
            return Vec::new();
        };
        store
            .artifacts(&job.id)
            .ok()
            .and_then(|mut v| v.pop())
            .map(|a| a.files)
            .unwrap_or_default()
    };
    let jobs: Vec<(String, Vec<String>)> = ids.iter().map(|id| (id.clone(), files(id))).collect();
    oneshot::job::overlap::land_order(&jobs)
}

/// `job approve ID… [--land]`.
pub fn approve(cx: &Cx, a: ApproveArgs) -> Result<i32> {
    let store = cx.store()?;
    let mut code = exit::OK;
    let mut approved = Vec::new();
    for id in &a.ids {
        let giving = giving();
        match verbs::give(&*store, id, JobTrigger::Approve, &giving) {
            Ok(given) => {
                let job = &given.job;
                if cx.quiet {
                    outln!("{}", job.state());
                } else {
                    outln!("{}: {} → {}", job.id, paint(given.from), paint(job.state()));
                }
                approved.push(job.id.clone());
            }
            Err(e) => {
                errln!("oneshot: approve {id}: {}", give_words(&e));
                code = code.max(give_code(&e));
            }
        }
    }
    if a.land {
        // Approved first, then landed in the order that lands the most.
        for id in ordered(&*store, &approved) {
            code = code.max(land_one(cx, &store, &id, false, a.resolver.as_deref()));
        }
    }
    Ok(code)
}

/// The resolver for job `id`: `--resolver`, else the `resolver` of the job's policy, else none
/// (a conflict then fails the land for a human to resolve).
fn resolver_for(
    cx: &Cx,
    store: &dyn oneshot::job::JobStore,
    id: &str,
    flag: Option<&str>,
) -> Result<Option<super::resolver::AskResolver>> {
    // A job that cannot be read is `land`'s to report.
    let Ok(job) = store.get(id) else {
        return Ok(None);
    };
    let from_policy = || {
        let path = job.spec.policy.as_deref()?;
        let policy =
            oneshot::policy::PolicyHost::load(path, oneshot::policy::PolicyOptions::default())
                .ok()?;
        let spec = policy.resolver()?.to_string();
        Some((spec, format!("resolver in {}", path.display())))
    };
    let Some((spec, from)) = flag
        .map(|s| (s.to_string(), "--resolver".to_string()))
        .or_else(from_policy)
    else {
        return Ok(None);
    };
    super::resolver::AskResolver::new(&spec, &from, &job.spec.source, &cx.state_dir).map(Some)
}

fn giving() -> Giving {
    Giving {
        actor: verbs::actor(),
        feedback: None,
        now_ms: now_ms(),
    }
}

/// Lands one job and reports it; its exit code.
fn land_one(
    cx: &Cx,
    shared: &std::sync::Arc<dyn oneshot::job::JobStore>,
    id: &str,
    json: bool,
    flag: Option<&str>,
) -> i32 {
    let store = &**shared;
    let mut resolver = match resolver_for(cx, store, id, flag) {
        Ok(r) => r,
        Err(e) => {
            errln!("oneshot: land {id}: {e:#}");
            return exit::for_error(&e);
        }
    };
    let resolver = resolver.as_mut().map(|r| r as &mut dyn landing::Resolver);
    match landing::land_in(store, id, &giving(), resolver, &cx.state_dir, None) {
        Ok(Land::Landed(job)) => {
            let landed = job.landed.as_ref();
            if json {
                outln!(
                    "{}",
                    json!({"job_id": job.id, "result": "landed", "state": job.state(),
                        "landed": landed})
                );
            } else if let Some(l) = landed {
                outln!("{}: {}", job.id, words(l));
                if let LandTarget::Remote { pull_request, .. } = &l.target
                    && !cx.quiet
                {
                    outln!("  open the pull request: {pull_request}");
                }
            }
            exit::OK
        }
        Ok(Land::Failed(job, failure)) => {
            // INTERVENTION_REQUIRED by this command's hand: it tells, as a runner would.
            if let Some(def) = &cx.notify {
                oneshot::notify::after_verb(def, &giving().actor, shared.clone(), &job.id);
            }
            if json {
                outln!(
                    "{}",
                    json!({"job_id": job.id, "result": "failed", "state": job.state(),
                        "failure": failure, "reason": failure.to_string()})
                );
            } else {
                outln!(
                    "{}: not landed, {} → {}",
                    job.id,
                    paint(JobState::Success),
                    paint(job.state())
                );
                outln!(
                    "{}",
                    super::wrap::wrap("  ", &failure.to_string(), 2, super::wrap::width())
                );
            }
            exit::FAILED
        }
        Err(e) => {
            let (text, code) = match &e {
                LandError::Give(g) => (give_words(g), give_code(g)),
                LandError::NoWorkspace { .. } => (e.to_string(), exit::REFUSED),
                LandError::Workspace { .. } => (e.to_string(), exit::FAILED),
                _ => (e.to_string(), exit::FAILED),
            };
            if json {
                outln!(
                    "{}",
                    json!({"job_id": id, "result": "error", "error": text})
                );
            }
            errln!("oneshot: land {id}: {text}");
            code
        }
    }
}

/// Where the work went, in a line.
fn words(l: &Landed) -> String {
    let n = l.commits.len();
    match &l.target {
        LandTarget::Branch { branch, from, to } => format!(
            "landed into {branch}: {} → {} ({n} commit(s))",
            short(from),
            short(to)
        ),
        _ => format!("{l} ({n} commit(s))"),
    }
}

/// A verb's refusal or a store's error, in the words the other verbs use.
fn give_words(e: &GiveError) -> String {
    match e {
        GiveError::Verb(VerbError::Refused { id, refused }) => format!("{id}: {refused}"),
        e => e.to_string(),
    }
}

fn give_code(e: &GiveError) -> i32 {
    use oneshot::job::JobStoreError as S;
    match e {
        GiveError::Verb(VerbError::Refused { .. } | VerbError::NotLandable { .. }) => exit::REFUSED,
        GiveError::Store(S::Conflict { .. } | S::Busy { .. }) => exit::REFUSED,
        GiveError::Store(S::NotFound { .. } | S::Ambiguous { .. }) => exit::USAGE,
        _ => exit::FAILED,
    }
}
