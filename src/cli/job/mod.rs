//! `oneshot job …`: seed 001's job lifecycle on the command line, thin over `oneshot::job`.
//! Each verb reads the job, asks the library what the verb does, and hands the result to the
//! store, which writes it only if the job has not moved meanwhile.

mod cleanup;
mod create;
mod json;
mod land;
mod log;
mod progress;
mod replay;
mod resolver;
mod run;
mod runners;
mod settings;
mod show;
mod verbs;
mod wrap;

use super::examples;
use super::exit;
use anyhow::Result;
use clap::{Args, Subcommand};
use clap_complete::engine::ArgValueCandidates;
use oneshot::job::JobState;
use oneshot::job::store::{JobStore, JobStoreError, StoreLocation};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The short state diagram `oneshot job --help` shows, and the exit codes of job verbs.
const DIAGRAM: &str = "\
Examples:
  id=$(oneshot job create --worker claude --auditor codex --activate \"add a --dry-run flag\")
  oneshot job run                                  # step every PENDING job until it rests
  oneshot job list --state approval_required
  oneshot job diff $id && oneshot job approve $id --land  # or: oneshot job reject $id --feedback TEXT
  oneshot job audit --json
  oneshot job replay $id --policy strict.lua       # what another policy would have decided
  oneshot job run --store postgres://oneshot@db/jobs  # a runner of a fleet (docs/fleet.md)

States (a job rests in the CAPITALISED ones between commands):
  DRAFT ─activate→ PENDING ─step→ provisioning → executing → harvesting → one of:
    SUCCESS                done ─land→ its work lands in the source (see `job land --help`)
    APPROVAL_REQUIRED      ─approve→ SUCCESS; ─reject --feedback→ PENDING
    INTERVENTION_REQUIRED  ─resubmit→ PENDING; after a failed land, fixed: ─land→ SUCCESS
  DRAFT, PENDING ─suspend→ SUSPENDED ─resume→ PENDING
  ─cancel→ CANCELED from any state but SUCCESS, recovering, harvesting (stops a running step)

Exit codes: 0 done; 1 runtime error; 2 usage error (bad arguments, unknown job id, reject
without --feedback, nothing to step); 4 refused: the job's state does not allow the verb (the
message says what it allows), the job moved meanwhile, or a runner holds it; 130 `run`/`step`
stopped by Ctrl-C (its unfinished jobs paused and handed back to the next runner).";

/// `oneshot job`: run coding jobs through seed 001's lifecycle (create, step, approve…).
#[derive(Debug, Args)]
#[command(after_help = DIAGRAM)]
pub struct JobArgs {
    /// The verb.
    #[command(subcommand)]
    pub command: JobCommand,
    /// `--store`, which every verb takes.
    #[command(flatten)]
    pub store: crate::cli::store::StoreFlag,
}

/// The verbs of `oneshot job`.
// Parsed once per process: the size of the largest variant costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Create a job (DRAFT; PENDING with --activate) and print its id.
    #[command(after_help = examples::JOB_CREATE)]
    Create(create::CreateArgs),
    /// DRAFT → PENDING: let runners pick the job up.
    #[command(after_help = examples::JOB_ACTIVATE)]
    Activate(IdArg),
    /// APPROVAL_REQUIRED → SUCCESS: accept the results (several ids: each reported); with
    /// --land, land each too.
    #[command(after_help = examples::JOB_APPROVE)]
    Approve(land::ApproveArgs),
    /// Land SUCCESS jobs in their source: rebase onto the base branch, then fast-forward it (a
    /// local repository), push the branch for a pull request (a base that tracks a remote), or
    /// copy the files back (a plain directory). A conflict leaves the base untouched and the
    /// job INTERVENTION_REQUIRED with the files named.
    #[command(after_help = examples::JOB_LAND)]
    Land(land::LandArgs),
    /// APPROVAL_REQUIRED → PENDING: send the result back with a critique for the next attempt.
    #[command(after_help = examples::JOB_REJECT)]
    Reject(verbs::RejectArgs),
    /// INTERVENTION_REQUIRED → PENDING: you fixed what was wrong; the loop bound starts over.
    #[command(after_help = examples::JOB_RESUBMIT)]
    Resubmit(IdArg),
    /// DRAFT or PENDING → SUSPENDED: no runner takes it until `resume`.
    #[command(after_help = examples::JOB_SUSPEND)]
    Suspend(IdArg),
    /// SUSPENDED → PENDING.
    #[command(after_help = examples::JOB_RESUME)]
    Resume(IdArg),
    /// → CANCELED, for good; a runner working on the job loses it and stops its agents.
    #[command(after_help = examples::JOB_CANCEL)]
    Cancel(IdArg),
    /// Run one step of one job (the given one, or the one waiting longest) until it rests;
    /// exits 1 when it rests in INTERVENTION_REQUIRED (a human must look).
    #[command(after_help = examples::JOB_STEP)]
    Step(run::StepArgs),
    /// Run steps of every claimable job until none is left (or --max-steps ran).
    #[command(after_help = examples::JOB_RUN)]
    Run(run::RunArgs),
    /// List jobs, oldest first.
    #[command(after_help = examples::JOB_LIST)]
    List(show::ListArgs),
    /// Show a job: spec, state, lease, history, artifacts, audit trail, diff stat.
    #[command(after_help = examples::JOB_SHOW)]
    Show(show::ShowArgs),
    /// The activity logs of the job's sessions, from the store: what each agent did, the
    /// transitions, the decisions — the same on any machine (--follow to watch it run).
    #[command(after_help = examples::JOB_LOG)]
    Log(log::LogArgs),
    /// Print the full patch of a job's work (base to workspace, uncommitted changes too).
    #[command(after_help = examples::JOB_DIFF)]
    Diff(IdArg),
    /// The audit trail of human decisions, of one job or of all.
    #[command(after_help = examples::JOB_AUDIT)]
    Audit(show::AuditArgs),
    /// The runners the store knows: machine, process, last heartbeat (by the store's clock),
    /// live or stale, and the leases each holds.
    #[command(after_help = examples::JOB_RUNNERS)]
    Runners(runners::RunnersArgs),
    /// Ask a policy again what the job's policy decided (approve, retry): where it would have
    /// sent the job.
    #[command(after_help = examples::JOB_REPLAY)]
    Replay(replay::ReplayArgs),
    /// Remove a SUCCESS or CANCELED job's workspace, if its work is merged or pushed (or
    /// --discard); a branch with commits found nowhere else is never deleted.
    #[command(after_help = examples::JOB_CLEANUP)]
    Cleanup(cleanup::CleanupArgs),
}

impl JobCommand {
    /// Whether this command becomes a runner (`step`, `run`): it drives sessions, and takes
    /// the signal handlers a session takes.
    pub fn runs_steps(&self) -> bool {
        matches!(self, JobCommand::Step(_) | JobCommand::Run(_))
    }
}

/// A job id (or unique prefix).
#[derive(Debug, Args)]
pub struct IdArg {
    /// Job id (`job-1a2b3c4d`) or a unique prefix of it.
    #[arg(add = ArgValueCandidates::new(crate::cli::complete::jobs))]
    pub id: String,
}

/// Runs `oneshot job …` on the store `--store`, the config `files` or the environment name
/// (else `<state_dir>/jobs.db`); `signals` are installed for the commands that [run
/// steps](JobCommand::runs_steps).
pub fn run(
    args: JobArgs,
    state_dir: &Path,
    files: &crate::cli::config::Files,
    quiet: bool,
    signals: Option<crate::cli::signals::Signals>,
) -> Result<i32> {
    use oneshot::job::JobTrigger as T;
    let (store, _) = crate::cli::store::location(args.store.store.as_deref(), files, state_dir)?;
    let cx = Cx {
        state_dir: state_dir.to_path_buf(),
        store,
        quiet,
        notify: files.notify().cloned(),
    };
    match args.command {
        JobCommand::Create(a) => create::run(&cx, a),
        JobCommand::Activate(a) => verbs::run(&cx, &a.id, T::Activate, None),
        JobCommand::Approve(a) => land::approve(&cx, a),
        JobCommand::Land(a) => land::land(&cx, a),
        JobCommand::Reject(a) => verbs::run(&cx, &a.id, T::Reject, a.feedback),
        JobCommand::Resubmit(a) => verbs::run(&cx, &a.id, T::Resubmit, None),
        JobCommand::Suspend(a) => verbs::run(&cx, &a.id, T::Suspend, None),
        JobCommand::Resume(a) => verbs::run(&cx, &a.id, T::Resume, None),
        JobCommand::Cancel(a) => verbs::run(&cx, &a.id, T::Cancel, None),
        JobCommand::Step(a) => run::step(&cx, a, signals),
        JobCommand::Run(a) => run::run(&cx, a, signals),
        JobCommand::List(a) => show::list(&cx, a),
        JobCommand::Show(a) => show::show(&cx, a),
        JobCommand::Log(a) => log::log(&cx, a),
        JobCommand::Diff(a) => show::diff(&cx, &a.id),
        JobCommand::Audit(a) => show::audit(&cx, a),
        JobCommand::Runners(a) => runners::runners(&cx, a),
        JobCommand::Replay(a) => replay::run(&cx, a),
        JobCommand::Cleanup(a) => cleanup::run(&cx, a),
    }
}

/// What every verb needs.
pub(crate) struct Cx {
    /// The state directory: the runner's sessions and workspaces.
    pub state_dir: PathBuf,
    /// Where the jobs are (`--store`, `store`, `ONESHOT_STORE`, `<state dir>/jobs.db`).
    pub store: StoreLocation,
    /// `--quiet`.
    pub quiet: bool,
    /// `[notify]` of the project's file, else the user's.
    pub notify: Option<oneshot::config::NotifyDef>,
}

impl Cx {
    /// The job store, SQLite or PostgreSQL.
    pub fn store(&self) -> Result<Arc<dyn JobStore>> {
        oneshot::job::store::open(&self.store)
            .map_err(|e| anyhow::Error::new(e).context("open the job store"))
    }
}

/// A store error, worded for the person at the terminal: what happened and what to do. Its
/// exit code comes from `exit::for_error`, which finds the [`JobStoreError`] in the chain.
pub(crate) fn store_error(doing: &str, e: JobStoreError) -> anyhow::Error {
    let hint = match &e {
        JobStoreError::NotFound { .. } => Some("`oneshot job list` shows the jobs".to_string()),
        JobStoreError::Ambiguous { .. } => Some("type more of the id".to_string()),
        JobStoreError::Conflict { id, .. } => Some(format!(
            "it moved while you decided; look again with `oneshot job show {id}`"
        )),
        JobStoreError::Busy { id, .. } => Some(format!(
            "a runner is working on it; wait for the step to end, or `oneshot job cancel {id}`"
        )),
        _ => None,
    };
    let err = anyhow::Error::new(e);
    match hint {
        Some(h) => err.context(format!("{doing} ({h})")),
        None => err.context(doing.to_string()),
    }
}

/// A job state on stdout, coloured like session states (green done, yellow waiting on a
/// human, red canceled, cyan on the way) when stdout is a terminal and colour is on, or when
/// colour is forced; `{:<21}` pads it (the escape codes around the padding).
pub(crate) fn paint(s: JobState) -> Painted {
    let code = match s {
        JobState::Success => "1;32",
        JobState::Canceled => "1;31",
        JobState::ApprovalRequired | JobState::InterventionRequired | JobState::Suspended => "1;33",
        _ => "36",
    };
    Painted(code, s)
}

/// See [`paint`].
pub(crate) struct Painted(&'static str, JobState);

impl std::fmt::Display for Painted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::io::IsTerminal;
        let on = super::color::forced() || (super::color::on() && std::io::stdout().is_terminal());
        // Padding goes inside the colour, so a table's columns stay aligned.
        let text = match f.width() {
            Some(w) => format!("{:<w$}", self.1.as_str()),
            None => self.1.as_str().to_string(),
        };
        if on {
            write!(f, "\x1b[{}m{text}\x1b[0m", self.0)
        } else {
            f.write_str(&text)
        }
    }
}

/// A refused verb: the CLI's usage-like refusal, exit code [`exit::REFUSED`].
pub(crate) fn refused(message: String) -> anyhow::Error {
    exit::refused(message)
}

/// `value` through the job's redactor, for a store write.
pub(crate) fn sealed<T: serde::Serialize + serde::de::DeserializeOwned>(
    job: &oneshot::job::record::Job,
    value: &T,
) -> Result<oneshot::redact::Redacted<T>> {
    oneshot::job::redactor(job.spec.policy.as_deref())
        .seal(value)
        .map_err(|e| anyhow::anyhow!("redact what job {} writes: {e}", job.id))
}

/// Now, in ms since the epoch, as this machine believes it (what a verb stamps its records
/// with; whether a lease is live is the store's clock's to say).
pub(crate) fn now_ms() -> u64 {
    use oneshot::job::store::StoreClock;
    oneshot::job::store::SystemClock.now_ms()
}
