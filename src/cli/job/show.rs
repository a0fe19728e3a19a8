//! `job list`, `job show`, `job diff`, `job audit`: reading the store, never writing it.

use super::now_ms;
use super::{Cx, paint, store_error, wrap};
use crate::cli::exit;
use crate::cli::show::{one_line, rfc3339};
use anyhow::{Context, Result};
use clap::Args;
use oneshot::job::JobState;
use oneshot::job::overlap::{self, Overlap};
use oneshot::job::record::AuditEntry;
use oneshot::job::store::{ListFilter, SessionJournal};
use oneshot::job::workspace;
use serde_json::{Value, json};

/// Options of `job list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only jobs in this state (any case, e.g. approval_required).
    #[arg(long, value_name = "S", value_parser = parse_state)]
    pub state: Option<JobState>,
    /// Print one JSON object per job, one per line.
    #[arg(long)]
    pub json: bool,
}

/// Options of `job show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Job id or unique prefix.
    #[arg(add = clap_complete::engine::ArgValueCandidates::new(crate::cli::complete::jobs))]
    pub id: String,
    /// Print one JSON object: the job, its lease, history, artifacts and audit trail.
    #[arg(long)]
    pub json: bool,
}

/// Options of `job audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only this job's decisions [default: every job's].
    #[arg(add = clap_complete::engine::ArgValueCandidates::new(crate::cli::complete::jobs))]
    pub id: Option<String>,
    /// Print one JSON object per entry, one per line.
    #[arg(long)]
    pub json: bool,
}

fn parse_state(s: &str) -> Result<JobState, String> {
    s.replace('-', "_").parse().map_err(|e| format!("{e}"))
}

/// How long ago `ms` was, in one short word: `12s`, `5m`, `3h`, `2d`.
fn age(ms: u64) -> String {
    let s = now_ms().saturating_sub(ms) / 1000;
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

/// A row of `job list --json` (docs/json.md).
#[derive(serde::Serialize)]
struct ListRow<'a> {
    job_id: &'a str,
    state: oneshot::job::JobState,
    title: &'a str,
    risk: oneshot::job::record::Risk,
    steps: u32,
    created_at: String,
    updated_at: String,
    runner_id: Option<&'a str>,
    nickname: Option<&'a str>,
    overlaps: &'a [Overlap],
    /// A pending job's wait, when every live runner holds back (`job run --reserve`).
    #[serde(skip_serializing_if = "Option::is_none")]
    waiting: Option<&'a oneshot::job::store::RunnerWait>,
}

/// `job list`.
pub fn list(cx: &Cx, a: ListArgs) -> Result<i32> {
    let store = cx.store()?;
    let jobs = store
        .list(&ListFilter { state: a.state })
        .map_err(|e| store_error("list the jobs", e))?;
    // Against every job, whatever `--state` shows.
    let overlaps = overlap::find(&*store).map_err(|e| store_error("list the jobs", e))?;
    let of = |id: &str| overlaps.get(id).map_or(&[][..], Vec::as_slice);
    // Why pending jobs are not started, when every live runner holds back. Only said: a store
    // that cannot list its runners still lists its jobs.
    let runners = store.runners().unwrap_or_default();
    let now = store.now_ms().unwrap_or_else(|_| now_ms());
    let wait = oneshot::job::store::pending_wait(&runners, now);
    let waiting =
        |state: oneshot::job::JobState| wait.filter(|_| state == oneshot::job::JobState::Pending);
    if a.json {
        for j in &jobs {
            // The sessions' words: an id named for what it is, times as `*_at` (RFC 3339).
            let row = ListRow {
                job_id: &j.id,
                state: j.state,
                title: &j.title,
                risk: j.risk,
                steps: j.steps,
                created_at: crate::cli::show::rfc3339(j.created_ms),
                updated_at: crate::cli::show::rfc3339(j.updated_ms),
                runner_id: j.runner.as_deref(),
                nickname: j.nickname.as_deref(),
                overlaps: of(&j.id),
                waiting: waiting(j.state),
            };
            outln!("{}", serde_json::to_string(&row)?);
        }
        return Ok(exit::OK);
    }
    if jobs.is_empty() {
        errln!("no jobs; `oneshot job create --help` shows how to make one");
        return Ok(exit::OK);
    }
    outln!(
        "{:<12}  {:<21}  {:>5}  {:<6}  {:<8}  TASK",
        "ID",
        "STATE",
        "STEPS",
        "RISK",
        "UPDATED"
    );
    for j in &jobs {
        let task = match &j.nickname {
            Some(nick) => format!("[{}] {}", one_line(nick, 30), one_line(&j.title, 60)),
            None => one_line(&j.title, 60),
        };
        let others: Vec<&str> = of(&j.id).iter().map(|o| o.job.as_str()).collect();
        let mut warn = if others.is_empty() {
            String::new()
        } else {
            format!("  ⚠ overlaps {}", others.join(", "))
        };
        if waiting(j.state).is_some() {
            warn.push_str("  ⏳ waiting for memory");
        }
        outln!(
            "{:<12}  {:<21}  {:>5}  {:<6}  {:<8}  {task}{warn}",
            j.id,
            paint(j.state),
            j.steps,
            j.risk.as_str(),
            age(j.updated_ms),
        );
    }
    if let Some(w) = wait
        && jobs.iter().any(|j| waiting(j.state).is_some())
    {
        outln!("⏳ pending jobs wait: every live runner is {w} (`oneshot job runners`)");
    }
    Ok(exit::OK)
}

/// `job show ID`.
pub fn show(cx: &Cx, a: ShowArgs) -> Result<i32> {
    let store = cx.store()?;
    let err = |e| store_error(&format!("show {}", a.id), e);
    let job = store.get(&a.id).map_err(err)?;
    let history = store.history(&job.id).map_err(err)?;
    let artifacts = store.artifacts(&job.id).map_err(err)?;
    let audit = store.audit(Some(&job.id)).map_err(err)?;
    let lease = store.lease(&job.id).map_err(err)?;
    let journals = store.journals(&job.id).map_err(err)?;
    // Live by the store's clock, as a claim judges it.
    let now = store.now_ms().unwrap_or_else(|_| now_ms());
    let live = lease.as_ref().filter(|l| l.live_at(now));
    let overlaps = overlap::find(&*store)
        .map_err(err)?
        .remove(&job.id)
        .unwrap_or_default();
    if a.json {
        // docs/json.md: the records in the outputs' vocabulary, with each move's trigger by
        // name and times in RFC 3339 (`at`, `until_at`).
        let history: Vec<_> = history
            .iter()
            .map(|t| {
                json!({"from": t.from, "to": t.to, "trigger": t.trigger.name(),
                    "reason": t.reason.as_ref().map(ToString::to_string),
                    "cause": super::json::cause(t.reason.as_ref()),
                    "by": t.by,
                    "at": crate::cli::show::rfc3339(t.at_ms)})
            })
            .collect();
        let v = json!({
            "job": super::json::job(&job)?,
            "lease": lease.as_ref().map(|l| json!({"runner_id": l.runner, "fence": l.fence,
                "until_at": crate::cli::show::rfc3339(l.until_ms), "live": l.live_at(now)})),
            "history": history,
            "artifacts": artifacts.iter().map(super::json::artifact).collect::<Result<Vec<_>>>()?,
            "audit": audit.iter().map(super::json::audit).collect::<Result<Vec<_>>>()?,
            "overlaps": overlaps,
            "sessions": journals.iter().map(session_json).collect::<Vec<_>>(),
        });
        // One object, pretty-printed like every single-object `--json` (docs/json.md).
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(exit::OK);
    }
    let s = &job.spec;
    // Reasons are shown whole, wrapped: a panel's dissent or a policy's why ends where it
    // ends, not at a column.
    let width = wrap::width();
    outln!("{}  {}", job.id, paint(job.state()));
    if let Some(r) = &job.reason {
        outln!("{}", wrap::wrap("  reason:   ", &r.to_string(), 12, width));
    }
    if let Some(nick) = &s.nickname {
        outln!("  nickname: {}", one_line(nick, 100));
    }
    outln!("  task:     {}", one_line(&s.task, 200));
    if let Some(branch) = &s.branch {
        outln!("  branch:   {branch}");
    }
    outln!(
        "  source:   {}{}",
        s.source.display(),
        s.base
            .as_deref()
            .map(|b| format!(" @ {b}"))
            .unwrap_or_default()
    );
    outln!("  worker:   {}", s.worker);
    outln!("  auditor:  {}", s.auditor);
    if !s.panel.is_empty() {
        outln!("  panel:    {} ({:?})", s.panel.join(", "), s.aggregate);
    }
    let policy = s.policy.as_ref().map(|p| p.display().to_string());
    outln!("  policy:   {}", policy.as_deref().unwrap_or("(built-in)"));
    outln!(
        "  risk:     {}   steps: {}   loops: {}/{}",
        s.risk,
        job.steps,
        job.loops,
        s.limits.max_loops
    );
    for (k, v) in &s.inputs {
        outln!("  input:    {k}={}", one_line(v, 100));
    }
    outln!(
        "  created:  {}   updated: {} ({})",
        rfc3339(job.created_ms),
        rfc3339(job.updated_ms),
        age(job.updated_ms)
    );
    match live {
        Some(l) => outln!(
            "  lease:    runner {} until {}",
            l.runner,
            rfc3339(l.until_ms)
        ),
        None => outln!("  lease:    none"),
    }
    if let Some(ws) = &job.workspace {
        outln!(
            "  workspace: {}{}",
            ws.path.display(),
            ws.branch
                .as_deref()
                .map(|b| format!(" (branch {b})"))
                .unwrap_or_default()
        );
    }
    if let Some(l) = &job.landed {
        outln!(
            "  landed:   {l} by {}, {} ({} commit(s))",
            l.by,
            rfc3339(l.at_ms),
            l.commits.len()
        );
        if let oneshot::job::land::LandTarget::Remote { pull_request, .. } = &l.target {
            outln!("            pull request: {pull_request}");
        }
    }
    if let Some(sid) = &job.session() {
        outln!("  session:  {sid}   (`oneshot job log {}`)", job.id);
    }
    outln!("\nHistory:");
    for t in &history {
        let head = format!(
            "  {}  {} → {}  {}  by {}",
            rfc3339(t.at_ms),
            paint(t.from),
            paint(t.to),
            t.trigger,
            t.by
        );
        match t.reason.as_ref().map(ToString::to_string).as_deref() {
            Some(r) => outln!(
                "{}",
                wrap::wrap(&format!("{head}  "), &format!("({r})"), 6, width)
            ),
            None => outln!("{head}"),
        }
    }
    if !journals.is_empty() {
        outln!(
            "\nSessions (from the store; `oneshot job log {}` shows what they did):",
            job.id
        );
        for j in &journals {
            outln!("  {}", session_line(j));
        }
    }
    if !artifacts.is_empty() {
        outln!("\nArtifacts:");
        for v in &artifacts {
            let stat = if v.diff_stat.trim().is_empty() {
                "no changes"
            } else {
                v.diff_stat.trim()
            };
            outln!(
                "  v{}  step {}  {}  {}  verdict: {}  commit: {}",
                v.version,
                v.step,
                v.outcome,
                stat,
                v.verdict.as_deref().unwrap_or("-"),
                v.commit
                    .as_deref()
                    .map(|c| c.get(..10).unwrap_or(c))
                    .unwrap_or("-")
            );
        }
    }
    if !overlaps.is_empty() {
        outln!("\nOverlaps (other live or approved jobs that changed the same files):");
        for o in &overlaps {
            outln!("  ⚠ {}: {}", o.job, o.files.join(", "));
        }
    }
    if !audit.is_empty() {
        outln!("\nAudit:");
        for e in &audit {
            outln!("  {}", audit_line(e));
        }
    }
    if let Some(ws) = &job.workspace {
        match workspace::diff_anywhere(&job.spec, ws, &job.id, &cx.state_dir) {
            Ok(patch) => outln!("\nDiff: {}", diff_stat(&patch)),
            Err(e) => outln!("\nDiff: (not readable: {e})"),
        }
    }
    Ok(exit::OK)
}

/// A session of the job as its journal in the store has it, on one line: its state,
/// iteration, the runner that ran it, when it was last shipped.
fn session_line(j: &SessionJournal) -> String {
    match j.session() {
        Ok(s) => format!(
            "{}  {}  iteration {}/{}  on {}  (as of {})",
            j.session,
            s.state(),
            s.iteration,
            s.max_iterations,
            j.runner,
            rfc3339(j.shipped_ms)
        ),
        Err(e) => format!(
            "{}  on {}  (its journal does not read: {e})",
            j.session, j.runner
        ),
    }
}

/// A session of the job for `job show --json` (docs/json.md).
fn session_json(j: &SessionJournal) -> serde_json::Value {
    let s = j.session().ok();
    json!({
        "session_id": j.session,
        "runner_id": j.runner,
        "shipped_at": crate::cli::show::rfc3339(j.shipped_ms),
        "state": s.as_ref().map(|s| s.state().to_string()),
        "iteration_count": s.as_ref().map(|s| s.iteration),
        "max_iterations": s.as_ref().map(|s| s.max_iterations),
    })
}

/// `N files changed, +A -D` of a patch, counted from its lines.
fn diff_stat(patch: &str) -> String {
    let files = patch
        .lines()
        .filter(|l| l.starts_with("diff --git "))
        .count();
    let add = patch
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .count();
    let del = patch
        .lines()
        .filter(|l| l.starts_with('-') && !l.starts_with("---"))
        .count();
    if files == 0 {
        return "no changes".into();
    }
    format!("{files} file(s) changed, +{add} -{del}   (`oneshot job diff ID` shows it)")
}

/// `job diff ID`.
pub fn diff(cx: &Cx, id: &str) -> Result<i32> {
    let store = cx.store()?;
    let job = store
        .get(id)
        .map_err(|e| store_error(&format!("diff {id}"), e))?;
    let Some(ws) = &job.workspace else {
        return Err(exit::usage(format!(
            "diff {}: it has no workspace yet ({}: no step has provisioned one)",
            job.id,
            job.state()
        )));
    };
    // From any machine: a remote's job whose worktree is elsewhere is read from its pushed
    // branch, fetched into this machine's mirror.
    let patch = workspace::diff_anywhere(&job.spec, ws, &job.id, &cx.state_dir)
        .with_context(|| format!("diff {}", job.id))?;
    out!("{patch}");
    Ok(exit::OK)
}

fn meta<'a>(e: &'a AuditEntry, k: &str) -> Option<&'a str> {
    e.metadata.get(k).and_then(Value::as_str)
}

fn audit_line(e: &AuditEntry) -> String {
    if let Some(m) = oneshot::job::said_of(e) {
        let now = if m.now { " (now)" } else { "" };
        return format!(
            "{}  {}  {}  {}  message {}{now}: {}",
            rfc3339(e.at_ms),
            e.actor,
            e.action,
            e.entity_id,
            m.id.get(..8).unwrap_or(&m.id),
            one_line(&m.text, 100),
        );
    }
    let feedback = meta(e, "feedback")
        .map(|f| format!("  feedback: {}", one_line(f, 100)))
        .unwrap_or_default();
    format!(
        "{}  {}  {}  {}  {} → {}{feedback}",
        rfc3339(e.at_ms),
        e.actor,
        e.action,
        e.entity_id,
        meta(e, "from").unwrap_or("-"),
        meta(e, "to").unwrap_or("-"),
    )
}

/// `job audit [ID]`.
pub fn audit(cx: &Cx, a: AuditArgs) -> Result<i32> {
    let store = cx.store()?;
    let entries = store
        .audit(a.id.as_deref())
        .map_err(|e| store_error("read the audit trail", e))?;
    for e in &entries {
        if a.json {
            outln!("{}", super::json::audit(e)?);
        } else {
            outln!("{}", audit_line(e));
        }
    }
    if entries.is_empty() && !a.json {
        errln!("no decisions recorded");
    }
    Ok(exit::OK)
}
