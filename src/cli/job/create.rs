//! `oneshot job create`: checks everything a step will need (the players, the source, the
//! policy) now, so a bad job is refused at the terminal rather than failing in a runner later.

use super::now_ms;
use super::{Cx, store_error};
use crate::cli::exit::usage;
use anyhow::{Context, Result};
use clap::Args;
use oneshot::job::record::{Aggregate, Job, JobLimits, JobSpec, Risk, Transition};
use oneshot::job::runner::Player;
use oneshot::job::store::{Decision, JobStore};
use oneshot::job::verbs::{self, VerbContext};
use oneshot::job::{JobState, JobTrigger, workspace};
use oneshot::policy::{PolicyHost, PolicyOptions};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

/// Options of `job create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The directory to work on: in a git repository the job gets a worktree on a branch of
    /// its own (oneshot/<job id>); a plain directory is copied.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub source: PathBuf,
    /// The git revision the job's branch starts from [default: HEAD when the step starts].
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// The worker agent (`claude`, `codex:MODEL`…; see `oneshot run --help`).
    #[arg(
        long,
        value_name = "AGENT[:MODEL]",
        required_unless_present = "worker_cmd",
        conflicts_with = "worker_cmd"
    )]
    pub worker: Option<String>,
    /// The worker's command line (as for `oneshot run --worker-cmd`).
    #[arg(long, value_name = "CMDLINE")]
    pub worker_cmd: Option<String>,
    /// The session's auditor agent.
    #[arg(
        long,
        value_name = "AGENT[:MODEL]",
        required_unless_present = "auditor_cmd",
        conflicts_with = "auditor_cmd"
    )]
    pub auditor: Option<String>,
    /// The auditor's command line.
    #[arg(long, value_name = "CMDLINE")]
    pub auditor_cmd: Option<String>,
    /// One more auditor judging the harvested result (repeatable): AGENT[:MODEL] or
    /// cmd:COMMAND LINE.
    #[arg(long, value_name = "AUDITOR")]
    pub panel: Vec<String>,
    /// How the panel's verdicts make one: all must say done, or a majority.
    #[arg(long, value_name = "HOW", default_value = "all", value_parser = clap::builder::PossibleValuesParser::new(["all", "majority"]))]
    pub aggregate: String,
    /// The policy file (Lua) [default: the built-in policy].
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// How much a mistake would cost; only low-risk jobs may be approved by the policy.
    #[arg(long, value_name = "LEVEL", default_value = "high", value_parser = clap::builder::PossibleValuesParser::new(["low", "medium", "high"]))]
    pub risk: String,
    /// A named input, given to the policy and appended to the worker's prompt (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub input: Vec<String>,
    /// Steps the job may take (since creation or the last resubmit) that end as usual; a step
    /// past them, after a reject, ends in INTERVENTION_REQUIRED unless the policy approves it
    /// [default: 5].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_loops: Option<u32>,
    /// Empty diffs or repeated findings in a row that count as no progress (0: never).
    #[arg(long, value_name = "N")]
    pub no_progress: Option<u32>,
    /// Make it PENDING at once (recorded as create, then activate).
    #[arg(long)]
    pub activate: bool,
    /// The task for the worker; `-` reads it from stdin.
    pub task: String,
}

/// `job create`.
pub fn run(cx: &Cx, a: CreateArgs) -> Result<i32> {
    let spec = spec(&a)?;
    let kind = workspace::check_source(&spec).map_err(|e| {
        usage(format!(
            "create the job: --source {}: {e}",
            a.source.display()
        ))
    })?;
    if let Some(rev) = &spec.base {
        check_base(&kind, &spec.source, rev)?;
    }
    if let Some(p) = &spec.policy {
        PolicyHost::load(p, PolicyOptions::default())
            .with_context(|| format!("create the job: --policy {}", p.display()))?;
    }
    let spec = without_secrets(spec)?;
    let now = now_ms();
    let id = format!("job-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let mut job = Job::new(id.clone(), spec, JobState::Draft, now);
    job.reason = Some(format!("created by {}", verbs::actor()));
    let vcx = VerbContext {
        actor: verbs::actor(),
        now_ms: now,
        policy_hash: super::verbs::policy_hash(&job),
        ..Default::default()
    };
    let store = cx.store()?;
    // `create` is recorded as a move into DRAFT from nothing (the entry has no `from`).
    let audit = verbs::audit_entry(&job, "create", JobState::Draft, &vcx);
    store
        .create(&super::sealed(&job, &job)?, &super::sealed(&job, &audit)?)
        .map_err(|e| store_error("create the job", e))?;
    if a.activate {
        let (moved, t, audit) = verbs::apply(&job, JobTrigger::Activate, &vcx)?;
        decide(&store, &moved, &t, &audit, JobState::Draft)?;
    }
    outln!("{id}");
    Ok(crate::cli::exit::OK)
}

fn decide(
    store: &dyn JobStore,
    job: &Job,
    t: &Transition,
    audit: &oneshot::job::record::AuditEntry,
    expected: JobState,
) -> Result<()> {
    store
        .decide(&Decision {
            job: &super::sealed(job, job)?,
            expected,
            transition: &super::sealed(job, t)?,
            audit: &super::sealed(job, audit)?,
            revoke: false,
        })
        .map_err(|e| store_error(&format!("activate {}", job.id), e))
}

/// The spec as the store will keep it: the task without its secrets (stored and given to the
/// agents redacted, said once), and no command line holding one — stored redacted, a runner
/// could not run it, so the job is refused now rather than failing in a runner later.
fn without_secrets(mut spec: JobSpec) -> Result<JobSpec> {
    let redactor = oneshot::job::redactor(spec.policy.as_deref());
    let players = [("--worker", &spec.worker), ("--auditor", &spec.auditor)]
        .into_iter()
        .chain(spec.panel.iter().map(|p| ("--panel", p)));
    for (flag, player) in players {
        if redactor.redact(player) != player.as_str() {
            return Err(usage(format!(
                "create the job: the {flag} command line holds a secret ({}); a job stores it \
                 without the secret and could not run it — pass secrets through the \
                 environment instead (the runner's environment reaches the agents)",
                redactor.redact(player)
            )));
        }
    }
    let mut held = Vec::new();
    let task = redactor.redact(&spec.task).into_owned();
    if task != spec.task {
        held.push("the task".to_string());
        spec.task = task;
    }
    for (key, value) in spec.inputs.iter_mut() {
        let redacted = redactor.redact(value).into_owned();
        if redacted != *value {
            held.push(format!("--input {key}"));
            *value = redacted;
        }
    }
    if !held.is_empty() {
        errln!(
            "oneshot: warning: {} {} a secret; it is stored and given to the agents without it: \
             pass secrets through the environment instead",
            held.join(", "),
            if held.len() == 1 { "holds" } else { "hold" }
        );
    }
    Ok(spec)
}

/// The spec the arguments describe, every part checked.
fn spec(a: &CreateArgs) -> Result<JobSpec> {
    let player = |agent: &Option<String>, cmd: &Option<String>, role: &str| -> Result<String> {
        let text = match (agent, cmd) {
            (_, Some(c)) => format!("cmd:{c}"),
            (Some(a), None) => a.clone(),
            (None, None) => {
                return Err(usage(format!(
                    "create the job: give --{role} or --{role}-cmd"
                )));
            }
        };
        Player::parse(&text).map_err(|e| usage(format!("create the job: --{role}: {e}")))?;
        Ok(text)
    };
    let worker = player(&a.worker, &a.worker_cmd, "worker")?;
    let auditor = player(&a.auditor, &a.auditor_cmd, "auditor")?;
    for p in &a.panel {
        Player::parse(p).map_err(|e| usage(format!("create the job: --panel {p}: {e}")))?;
    }
    let mut inputs = BTreeMap::new();
    for kv in &a.input {
        let Some((k, v)) = kv.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
            return Err(usage(format!(
                "create the job: --input {kv:?} is not KEY=VALUE"
            )));
        };
        inputs.insert(k.trim().to_string(), v.to_string());
    }
    let task = if a.task == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("create the job: read the task from stdin")?;
        s
    } else {
        a.task.clone()
    };
    if task.trim().is_empty() {
        return Err(usage("create the job: the task is empty"));
    }
    // Absolute paths: runners may run from anywhere.
    let absolute = |p: &PathBuf, what: &str| -> Result<PathBuf> {
        std::fs::canonicalize(p)
            .map_err(|e| usage(format!("create the job: {what} {}: {e}", p.display())))
    };
    let source = absolute(&a.source, "--source")?;
    let policy = a
        .policy
        .as_ref()
        .map(|p| absolute(p, "--policy"))
        .transpose()?;
    let mut limits = JobLimits::default();
    if let Some(n) = a.max_loops {
        limits.max_loops = n;
    }
    if let Some(n) = a.no_progress {
        limits.no_progress = n;
    }
    Ok(JobSpec {
        task,
        source,
        base: a.base.clone(),
        worker,
        auditor,
        panel: a.panel.clone(),
        aggregate: a.aggregate.parse::<Aggregate>().map_err(usage)?,
        policy,
        risk: a.risk.parse::<Risk>().map_err(usage)?,
        inputs,
        limits,
    })
}

/// `--base REV` names a commit of the source's repository: said now, not at provisioning.
fn check_base(kind: &workspace::SourceKind, source: &std::path::Path, rev: &str) -> Result<()> {
    if *kind == workspace::SourceKind::Plain {
        return Err(usage(format!(
            "create the job: --base {rev}: the source {} is not in a git repository, so it \
             has no revisions",
            source.display()
        )));
    }
    let ok = std::process::Command::new("git")
        .args(["rev-parse", "--quiet", "--verify"])
        .arg(format!("{rev}^{{commit}}"))
        .current_dir(source)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("create the job: run git to check --base")?;
    if !ok.success() {
        return Err(usage(format!(
            "create the job: --base {rev} is no commit of the repository at {}",
            source.display()
        )));
    }
    Ok(())
}
