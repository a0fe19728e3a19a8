//! `oneshot job create`: checks everything a step will need (the players, the source, the
//! policy) now, so a bad job is refused at the terminal rather than failing in a runner later.

use super::now_ms;
use super::settings;
use super::{Cx, store_error};
use crate::cli::config::Files;
use crate::cli::exit::usage;
use anyhow::{Context, Result};
use clap::Args;
use oneshot::job::naming;
use oneshot::job::record::{Aggregate, JobLimits, JobSpec, Risk};
use oneshot::job::runner::Player;
use oneshot::job::verbs;
use oneshot::job::{CreateError, Creating, workspace};
use oneshot::policy::{PolicyHost, PolicyOptions};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Options of `job create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The directory to work on: in a git repository the job gets a worktree on a branch of
    /// its own (oneshot/<words of the task>-<short id>); a plain directory is copied. The oneshot.toml at or above
    /// it (the project the job works on, not the current directory) gives worker, worker-cmd,
    /// auditor, auditor-cmd and policy where no flag does.
    /// With --remote: the directory inside the repository the agents work in, relative to its
    /// top.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub source: PathBuf,
    /// The job's source is this git remote — a URL (https://, ssh://, git@host:path) or a path
    /// every runner can reach (a bare repository on a shared disk) — not a directory of this
    /// machine: each runner provisions from its own mirror of it (<state dir>/mirrors/) and
    /// pushes the job's branch there at each harvest, so `job diff` and `job land` work from
    /// any machine. Checked now (`git ls-remote`); a password or token in the URL is refused
    /// (use a credential helper or ssh keys).
    #[arg(long, value_name = "URL|PATH", conflicts_with_all = ["include_uncommitted", "from_head"])]
    pub remote: Option<String>,
    /// The git revision the job's branch starts from [default: HEAD when the step starts];
    /// with --remote, a branch of the remote, where `job land` puts the work [default: the
    /// remote's default branch].
    #[arg(long, value_name = "REV", conflicts_with_all = ["include_uncommitted", "from_head"])]
    pub base: Option<String>,
    /// Start the job from the source's uncommitted changes (edits, staged changes, untracked
    /// files): kept in a commit on top of HEAD that the job's branch starts from; your branch,
    /// index and files stay as they are.
    #[arg(long, conflicts_with = "from_head")]
    pub include_uncommitted: bool,
    /// Start the job from HEAD, leaving the source's uncommitted changes out.
    #[arg(long)]
    pub from_head: bool,
    /// The worker agent (`claude`, `codex:MODEL`…; see `oneshot run --help`) [default: worker
    /// or worker-cmd in oneshot.toml or your config.toml, else ONESHOT_WORKER(_CMD)].
    #[arg(long, value_name = "AGENT[:MODEL]", conflicts_with = "worker_cmd")]
    pub worker: Option<String>,
    /// The worker's command line (as for `oneshot run --worker-cmd`).
    #[arg(long, value_name = "CMDLINE")]
    pub worker_cmd: Option<String>,
    /// The session's auditor agent [default: auditor or auditor-cmd in oneshot.toml or your
    /// config.toml, else ONESHOT_AUDITOR(_CMD)].
    #[arg(long, value_name = "AGENT[:MODEL]", conflicts_with = "auditor_cmd")]
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
    /// The policy file (Lua) [default: policy in oneshot.toml or your config.toml, else
    /// ONESHOT_POLICY, else the built-in policy].
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
    /// A check: a shell command every session of the job runs in the worktree after the worker
    /// and before the auditor (a failure is a RETRY without an auditor run), and `job land`
    /// runs again on the rebased result; repeatable [default: `check` in oneshot.toml].
    #[arg(long, value_name = "CMD")]
    pub check: Vec<String>,
    /// Ask this agent (or [targets.NAME] of oneshot.toml, or cmd:COMMAND LINE) for the job's
    /// branch name and a nickname (schema branch-suggest); on any failure the branch is named from the task, with
    /// a warning [default: namer in oneshot.toml or your config.toml, else ONESHOT_NAMER, else
    /// none].
    #[arg(long, value_name = "AGENT[:MODEL]|NAME|cmd:CMDLINE")]
    pub namer: Option<String>,
    /// Make it PENDING at once (recorded as create, then activate).
    #[arg(long)]
    pub activate: bool,
    /// The task for the worker; `-` reads it from stdin.
    pub task: String,
}

/// `job create`.
pub fn run(cx: &Cx, a: CreateArgs) -> Result<i32> {
    let remote = a.remote.as_deref().map(remote_of).transpose()?;
    // Absolute paths: runners may run from anywhere. A remote's job names a directory inside
    // the repository instead, and reads its settings where it is made.
    let source = match &remote {
        Some(_) => inside(&a.source)?,
        None => absolute(&a.source, "--source")?,
    };
    let settings_at = match &remote {
        Some(_) => std::env::current_dir().context("create the job: the current directory")?,
        None => source.clone(),
    };
    let mut settings = settings::resolve(
        &settings::Flags {
            worker: a.worker.as_deref(),
            worker_cmd: a.worker_cmd.as_deref(),
            auditor: a.auditor.as_deref(),
            auditor_cmd: a.auditor_cmd.as_deref(),
            policy: a.policy.as_deref(),
            check: &a.check,
            namer: a.namer.as_deref(),
        },
        &settings_at,
    )?;
    let namer = settings
        .namer
        .as_ref()
        .map(|n| (n.value.clone(), n.from.clone()));
    let files = std::mem::take(&mut settings.files);
    let (mut spec, policy_from) = spec(&a, source, settings)?;
    let kind = match &remote {
        Some(url) => {
            spec.base = Some(remote_base(url, spec.base.as_deref())?);
            spec.remote = Some(url.clone());
            // A git repository, though not on this machine: named like one, never copied.
            workspace::SourceKind::Git {
                root: PathBuf::new(),
            }
        }
        None => workspace::check_source(&spec).map_err(|e| {
            usage(format!(
                "create the job: --source {}: {e}",
                a.source.display()
            ))
        })?,
    };
    if let (Some(rev), None) = (&spec.base, &remote) {
        check_base(&kind, &spec.source, rev)?;
    }
    if let (Some(p), Some(from)) = (&spec.policy, &policy_from) {
        PolicyHost::load(p, PolicyOptions::default())
            .with_context(|| format!("create the job: {from} {}", p.display()))?;
    }
    let id = oneshot::job::new_id();
    let made_base = match (&kind, &spec.base) {
        (workspace::SourceKind::Git { root }, None) if !a.from_head && remote.is_none() => {
            uncommitted_base(&id, root, &spec.source, a.include_uncommitted)?
        }
        _ => None,
    };
    if let Some((commit, _)) = &made_base {
        spec.base = Some(commit.clone());
    }
    if let (Some((namer, from)), workspace::SourceKind::Git { .. }) = (&namer, &kind) {
        name(cx, &mut spec, &id, namer, from, &files);
    }
    let created = create(cx, &a, &id, spec);
    if let Some((commit, root)) = &made_base {
        if created.is_err() {
            // Best effort: the job does not exist, so nothing will clean its base up.
            let _ = workspace::forget_base(&id, root);
        } else if !cx.quiet {
            errln!(
                "oneshot: {id} starts from {}, a commit of the uncommitted changes in {} on \
                 top of HEAD (kept as refs/oneshot/base/{id} until `oneshot job cleanup {id}`)",
                &commit[..12.min(commit.len())],
                root.display()
            );
        }
    }
    created?;
    outln!("{id}");
    Ok(crate::cli::exit::OK)
}

/// How long a namer may take to answer before the branch is named from the task.
const NAMER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Asks `namer` (given by `from`) for job `id`'s branch and nickname and puts them in `spec`;
/// any failure is a warning, and the branch is then named from the task.
fn name(cx: &Cx, spec: &mut JobSpec, id: &str, namer: &str, from: &str, files: &Files) {
    // The namer reads the task as the agents will: without its secrets.
    let task = oneshot::job::redactor(spec.policy.as_deref())
        .redact(&spec.task)
        .into_owned();
    let target = match namer.strip_prefix("cmd:") {
        Some(cmd) => Ok((oneshot::ask::Target::Command(cmd.to_string()), Vec::new())),
        None => crate::cli::ask::resolve(namer, &[], files),
    };
    let asked = target.and_then(|(target, env)| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("start the runtime")?;
        let named = rt.block_on(naming::suggest(
            target,
            env,
            &task,
            id,
            &spec.source,
            NAMER_TIMEOUT,
        ))?;
        Ok(named)
    });
    match asked {
        Ok(named) => {
            spec.branch = Some(named.branch);
            spec.nickname = named.nickname;
        }
        Err(e) => {
            let fallback = naming::branch_from_task(&spec.task, id);
            if !cx.quiet {
                errln!(
                    "oneshot: warning: the namer {namer} ({from}) gave no branch name: {e:#}; the branch \
                     is {fallback}, named from the task"
                );
            }
            spec.branch = Some(fallback);
        }
    }
}

/// The source's uncommitted changes, dealt with as asked: refused without a flag that says
/// what to do with them; with `--include-uncommitted`, committed on top of HEAD as the job's
/// base (the commit and the repository it is in are returned). A clean source needs nothing.
fn uncommitted_base(
    id: &str,
    root: &Path,
    source: &Path,
    include: bool,
) -> Result<Option<(String, PathBuf)>> {
    let files = workspace::uncommitted(root).map_err(|e| {
        anyhow::Error::new(e).context("create the job: look for uncommitted changes")
    })?;
    if files.is_empty() {
        return Ok(None);
    }
    if !include {
        return Err(usage(format!(
            "create the job: the source {} has uncommitted changes ({}), which a job \
             branching from HEAD would leave out; give --include-uncommitted to start the job \
             from them (a commit on top of HEAD; your branch, index and files stay as they \
             are), or --from-head to leave them out (or commit them, or --base REV)",
            source.display(),
            name_some(&files)
        )));
    }
    let commit = workspace::commit_uncommitted(id, root).map_err(|e| {
        anyhow::Error::new(e).context("create the job: commit the uncommitted changes")
    })?;
    Ok(Some((commit, root.to_owned())))
}

/// The first few names of a list, and how many more there are.
fn name_some(files: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = files[..files.len().min(SHOWN)].join(", ");
    if files.len() > SHOWN {
        s.push_str(&format!(" and {} more", files.len() - SHOWN));
    }
    s
}

/// Stores job `id` of `spec` (in DRAFT, or PENDING with `--activate`) through
/// `oneshot::job::create`, saying once what held a secret.
fn create(cx: &Cx, a: &CreateArgs, id: &str, spec: JobSpec) -> Result<()> {
    let store = cx.store()?;
    let how = Creating {
        actor: verbs::actor(),
        activate: a.activate,
        now_ms: now_ms(),
    };
    let created = oneshot::job::create(&*store, id, spec, &how).map_err(|e| match e {
        CreateError::SecretInCommand { .. }
        | CreateError::SecretInRemote { .. }
        | CreateError::EmptyTask => usage(format!("create the job: {e}")),
        CreateError::Store(e) => store_error("create the job", e),
        e => anyhow::Error::new(e).context("create the job"),
    })?;
    if !created.redacted.is_empty() {
        let held: Vec<String> = created
            .redacted
            .iter()
            .map(|h| match h.strip_prefix("input ") {
                Some(key) => format!("--input {key}"),
                None => h.clone(),
            })
            .collect();
        errln!(
            "oneshot: warning: {} {} a secret; it is stored and given to the agents without it: \
             pass secrets through the environment instead",
            held.join(", "),
            if held.len() == 1 { "holds" } else { "hold" }
        );
    }
    Ok(())
}

/// The spec the arguments and settings describe, every part checked; and where its policy
/// was named.
fn spec(
    a: &CreateArgs,
    source: PathBuf,
    settings: settings::Settings,
) -> Result<(JobSpec, Option<String>)> {
    for player in [&settings.worker, &settings.auditor] {
        Player::parse(&player.value)
            .map_err(|e| usage(format!("create the job: {}: {e}", player.from)))?;
    }
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
    let (policy, policy_from) = match settings.policy {
        Some(p) => (Some(absolute(&p.value, &p.from)?), Some(p.from)),
        None => (None, None),
    };
    let mut limits = JobLimits::default();
    if let Some(n) = a.max_loops {
        limits.max_loops = n;
    }
    if let Some(n) = a.no_progress {
        limits.no_progress = n;
    }
    let spec = JobSpec {
        task,
        source,
        // Set by `run` once the remote answered.
        remote: None,
        base: a.base.clone(),
        worker: settings.worker.value,
        auditor: settings.auditor.value,
        panel: a.panel.clone(),
        aggregate: a.aggregate.parse::<Aggregate>().map_err(usage)?,
        policy,
        risk: a.risk.parse::<Risk>().map_err(usage)?,
        inputs,
        limits,
        // Taken by `oneshot::job::create` from the source's git identity.
        author: None,
        checks: settings
            .checks
            .iter()
            .map(|c| oneshot::check::Check::command(c))
            .collect(),
        // Named by `oneshot::job::create` from the task, unless a namer names it.
        branch: None,
        nickname: None,
    };
    Ok((spec, policy_from))
}

/// `--remote URL|PATH` as the spec keeps it: a path that exists here made absolute (runners
/// may run from anywhere); a URL holding a password refused before anything prints it.
fn remote_of(url: &str) -> Result<String> {
    if url.trim().is_empty() {
        return Err(usage(
            "create the job: --remote is empty: give a git URL or path",
        ));
    }
    if workspace::holds_secret(url) {
        return Err(usage(format!(
            "create the job: --remote {}: the URL holds a password or token, which the job \
             store would keep; give it without one and let git find the credentials on each \
             runner (a credential helper, ssh keys, ~/.netrc)",
            workspace::shown_url(url)
        )));
    }
    let path = Path::new(url);
    if !url.contains("://") && path.exists() {
        return Ok(std::fs::canonicalize(path)
            .with_context(|| format!("create the job: --remote {url}"))?
            .display()
            .to_string());
    }
    Ok(url.to_owned())
}

/// The base branch of a remote's job: `--base`, which the remote must have, else the
/// remote's default branch; asked of the remote now, so a bad URL is refused at the terminal.
fn remote_base(url: &str, base: Option<&str>) -> Result<String> {
    let failed = |e: workspace::WorkspaceError| {
        anyhow::Error::new(e).context(format!(
            "create the job: --remote {}",
            workspace::shown_url(url)
        ))
    };
    workspace::check_remote(url, base).map_err(failed)?;
    match base {
        Some(b) => Ok(b.to_owned()),
        None => workspace::default_branch(url)
            .map_err(failed)?
            .ok_or_else(|| {
                usage(format!(
                    "create the job: --remote {}: it has no default branch (an empty repository?): \
                 push a first commit there, or give --base BRANCH",
                    workspace::shown_url(url)
                ))
            }),
    }
}

/// `--source DIR` of a remote's job: a directory inside the repository, relative to its top.
fn inside(p: &Path) -> Result<PathBuf> {
    use std::path::Component;
    let fine = p
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !fine {
        return Err(usage(format!(
            "create the job: --source {}: with --remote it names a directory inside the \
             repository, relative to its top (`.`, `crates/core`), without `..`",
            p.display()
        )));
    }
    let inside: PathBuf = p
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    Ok(if inside.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        inside
    })
}

/// `p` made absolute (runners may run from anywhere); `what` names where it was given.
fn absolute(p: &Path, what: &str) -> Result<PathBuf> {
    std::fs::canonicalize(p)
        .map_err(|e| usage(format!("create the job: {what} {}: {e}", p.display())))
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
