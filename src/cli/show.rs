//! `oneshot status` and `log`: reading one session without driving it (and the formatting
//! `list` and `prune` share).

use super::exit::usage;
use anyhow::{Context, Result};
use oneshot::policy::GuardOutcome;
use oneshot::session::{Phase, Session};
use oneshot::store::{
    DecisionRecord, DecisionResult, Decoder, Liveness, ProcessEvent, Record, SessionDir, Store,
    holder_alive, read_from, read_log,
};
use serde_json::Value;
use std::time::Duration;

/// The session `id` names (an id or unique prefix), or without one the latest session: what
/// `status`, `log` and `resume` act on. `doing` says what the latest was wanted for, e.g.
/// "show the latest session", for the error when there is none.
pub fn session_or_latest(store: &Store, id: Option<&str>, doing: &str) -> Result<SessionDir> {
    match id {
        Some(id) => Ok(store.open(id)?),
        None => store.latest()?.ok_or_else(|| {
            usage(format!(
                "{doing}: there are none under {}; start one with \
                 oneshot --worker-cmd … --auditor-cmd … \"the task\"",
                store.root().display()
            ))
        }),
    }
}

/// `oneshot status [ID] [--json]`.
pub fn status(store: &Store, id: Option<&str>, json: bool) -> Result<i32> {
    let dir = session_or_latest(store, id, "show the latest session")?;
    // The same typed, sealed read as `resume`: a corrupt or rewritten state file is an error
    // here too, never printed as if it were the session.
    let file = dir.read_sealed_state()?;
    let live = Liveness::of(file.state(), &dir.lock_path());
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&status_json(&file, live)?)?
        );
        return Ok(0);
    }
    print_status(&file, live);
    Ok(0)
}

/// `status --json` (documented in docs/json.md): the state file's fields, and whether a
/// oneshot drives the session now.
fn status_json(f: &Session, live: Liveness) -> Result<Value> {
    let mut v = serde_json::to_value(f).context("write the session as JSON")?;
    if let Value::Object(map) = &mut v {
        map.insert("liveness".into(), live.as_str().into());
        map.insert("stale".into(), (live == Liveness::Stale).into());
        let pid = match live {
            Liveness::Running { pid } => Some(pid),
            _ => None,
        };
        map.insert("pid".into(), pid.into());
        let resume = live.resumable().then(|| resume_command(&f.id));
        map.insert("resume_command".into(), resume.into());
    }
    Ok(v)
}

/// How to continue a session nobody drives.
pub fn resume_command(id: &str) -> String {
    format!("oneshot resume {id}")
}

fn print_status(f: &Session, live: Liveness) {
    outln!("session   {}", f.id);
    match live {
        Liveness::Stale => outln!(
            "state     {} (stale: the oneshot that drove it is gone)",
            f.state()
        ),
        Liveness::Running { pid } => outln!("state     {} (oneshot pid {pid})", f.state()),
        Liveness::Paused | Liveness::Ended => outln!("state     {}", f.state()),
    }
    outln!("iteration {}/{}", f.iteration, f.max_iterations);
    outln!("task      {}", one_line(&f.task, 100));
    outln!("workdir   {}", f.workdir.display());
    outln!(
        "policy    {} ({})",
        f.policy
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "built-in".into()),
        f.policy.hash
    );
    if let Some(spent) = super::cost::long(&f.agents.spent) {
        outln!("spent     {spent} (as the agents reported it)");
    }
    outln!("created   {}", rfc3339(f.created_ms));
    outln!("updated   {}", rfc3339(f.updated_ms));
    if let Some(v) = &f.last_verdict {
        outln!(
            "verdict   {:?}{}",
            v.verdict,
            v.reason
                .as_deref()
                .map(|r| format!(": {}", one_line(r, 100)))
                .unwrap_or_default()
        );
    }
    if let (Some(role), Some(p)) = (f.phase.role(), f.phase.run().and_then(|r| r.process)) {
        // Without a live oneshot the recorded process is only what was running at the crash.
        let was = if live == Liveness::Stale { "was " } else { "" };
        outln!("running   {was}{role} pid {} (group {})", p.pid, p.pgid);
    }
    if let Phase::Interrupted(p) = &f.phase {
        outln!("paused    during the {} ({})", p.during, p.cause);
    }
    outln!("history");
    for h in &f.history {
        let mut line = format!(
            "  {}  {:<20} iter {}",
            fmt_ts(h.ts),
            h.state.as_str(),
            h.iteration
        );
        if let Some(pid) = h.pid {
            line.push_str(&format!("  pid {pid}"));
        }
        if let Some(r) = &h.reason {
            line.push_str(&format!("  {}", one_line(&r.to_string(), 160)));
        }
        outln!("{line}");
    }
    if live.resumable() {
        outln!("resume    {}", resume_command(&f.id));
    } else if f.phase.retake().is_some() {
        outln!(
            "resume    fix the policy, then {} (or add --policy FILE): the failed question is \
             asked again, the work is kept",
            resume_command(&f.id)
        );
    }
}

/// `oneshot log ID [--follow] [--json]`.
pub fn log(store: &Store, id: Option<&str>, follow: bool, json: bool) -> Result<i32> {
    let dir = session_or_latest(store, id, "show the latest session's log")?;
    let path = dir.log_path();
    let mut decoder = Decoder::default();
    let mut print = |records: &[Value], warnings: &[String]| {
        for w in warnings {
            errln!("oneshot: warning: {w}");
        }
        for r in records {
            if json {
                outln!("{r}");
                continue;
            }
            match decoder.decode(r.clone()) {
                Ok((record, _)) => {
                    if let Some(line) = render(&record) {
                        // Agent text is quoted here: its control sequences (a title change,
                        // a clear screen) stay in the log, never reach the reader's terminal.
                        outln!("{}", super::sanitize::clean(&line));
                    }
                }
                Err(e) => errln!("oneshot: warning: {e}"),
            }
        }
    };
    if !follow {
        let all = read_log(&path)?;
        print(&all.records, &all.warnings);
        return Ok(0);
    }
    let mut offset = 0u64;
    loop {
        // Decide before reading, so the records written just before the end are not missed.
        let done = finished(&dir);
        let chunk = read_from(&path, offset)?;
        print(&chunk.records, &chunk.warnings);
        offset = chunk.offset;
        if done {
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if len > offset {
                errln!(
                    "oneshot: warning: {}: skipped a torn last line (oneshot was probably killed while writing)",
                    path.display()
                );
            }
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A session nobody drives any more: the process that took its lock is gone or let go. Read
/// from the lock file, never by taking the lock (that would refuse a concurrent `resume`, and
/// needs write access). Not "its state is terminal": the state file is written before the last
/// log records, so that would end the follow too early.
fn finished(dir: &SessionDir) -> bool {
    !holder_alive(&dir.lock_path())
}

/// One record as a line for people; `None` for records only machines read (blobs, routine
/// built-in decisions).
fn render(r: &Record) -> Option<String> {
    let ts = r.ts().map(fmt_ts).unwrap_or_default();
    Some(match r {
        Record::Activity(a) => {
            let data = match &a.data {
                Value::String(t) => t.clone(),
                v => v.to_string(),
            };
            format!("{ts} [{}#{}] {data}", a.role, a.iteration)
        }
        Record::StateChange(c) => {
            let mut line = format!("{ts} == {} -> {}", c.from, c.to);
            if let Some(reason) = &c.reason {
                line.push_str(&format!(" ({reason})"));
            }
            line
        }
        Record::Process(p) => {
            let what = match &p.event {
                ProcessEvent::Started { process, .. } => format!("started, pid {}", process.pid),
                ProcessEvent::SpawnFailed { error } => format!("could not start: {error}"),
                ProcessEvent::Stopping { reason } => format!("stopping ({reason})"),
                ProcessEvent::Killed => "killed".to_string(),
                ProcessEvent::Exited {
                    exit_code, signal, ..
                } => match (exit_code, signal) {
                    (Some(c), _) => format!("exited with code {c}"),
                    (None, Some(s)) => format!("killed by signal {s}"),
                    _ => "ended".to_string(),
                },
                ProcessEvent::Fenced { outcome } => outcome.clone(),
                ProcessEvent::AgentSession { session } => {
                    format!("agent session {}", session.session_id)
                }
                ProcessEvent::AgentProgress { spent } => {
                    format!("{} turn(s) so far", spent.turns)
                }
                ProcessEvent::AgentUsage { spent } => format!(
                    "used {} turn(s), {} tokens{}",
                    spent.turns,
                    spent.tokens,
                    if spent.usd > 0.0 {
                        format!(", ${:.4}", spent.usd)
                    } else {
                        String::new()
                    }
                ),
                ProcessEvent::AgentFailed { failure } => {
                    let status = failure.status.map(|s| format!(" {s}")).unwrap_or_default();
                    format!(
                        "{} reported a failure ({}{status}): {}",
                        failure.agent,
                        failure.kind.as_str(),
                        failure.message
                    )
                }
            };
            format!("{ts} .. {}#{} {what}", p.role, p.iteration)
        }
        Record::Evidence(e) => format!(
            "{ts} .. evidence: {} changed file(s) ({})",
            e.evidence.changed_files.len(),
            e.evidence.changes_source
        ),
        Record::Interrupt(i) => {
            format!("{ts} !! interrupt{}", if i.force { " (kill)" } else { "" })
        }
        // A built-in default that let things go on as usual (a guard that allows, an
        // observer, the standard prompt) decided nothing worth reading; `--json` keeps them.
        Record::Decision(d) if d.builtin && routine(&d.result) => return None,
        Record::Decision(d) => format!("{ts} ?? {}", decision(d)),
        Record::Blob(_) | Record::Unknown => return None,
        Record::Session(s) => format!(
            "{ts} session {}",
            match &s.event {
                oneshot::store::SessionEvent::Created { .. } => "created",
                oneshot::store::SessionEvent::Resumed => "resumed",
            }
        ),
        Record::Warning(m) => format!("{ts} warning: {}", m.message),
        Record::Note(m) => format!("{ts} note: {}", m.message),
        Record::PolicyReload(p) => format!(
            "{ts} policy reloaded: generation {} ({})",
            p.generation, p.policy_hash
        ),
        Record::PolicyReloadFailed(p) => format!(
            "{ts} policy edit not activated, generation {} keeps deciding: {}",
            p.generation, p.message
        ),
        Record::PolicyUntrusted(p) => format!("{ts} policy change waits for trust: {}", p.message),
        Record::PolicyLog(l) => format!("{ts} policy {} [{}]: {}", l.level, l.hook, l.message),
    })
}

/// An answer that changes nothing: a guard allowing, an observer returning, a prompt.
fn routine(r: &DecisionResult) -> bool {
    matches!(
        r,
        DecisionResult::Guard(GuardOutcome::Allow)
            | DecisionResult::Observed
            | DecisionResult::Prompt(_)
    )
}

/// A decision in a few words: the hook and what it answered.
fn decision(d: &DecisionRecord) -> String {
    let key = d.key.clone().unwrap_or_else(|| d.hook.to_string());
    let builtin = if d.builtin { " (built-in)" } else { "" };
    let reason = |r: &Option<String>| {
        r.as_ref()
            .map(|r| format!(": {}", one_line(r, 100)))
            .unwrap_or_default()
    };
    let answer = match &d.result {
        // The words as the auditor and the policy write them; the reason exactly as given.
        DecisionResult::Verdict(v) => format!(
            "{}{}",
            format!("{:?}", v.verdict).to_uppercase(),
            reason(&v.reason)
        ),
        DecisionResult::Salvage(s) => format!(
            "{}{}",
            format!("{:?}", s.salvage).to_lowercase(),
            reason(&s.reason)
        ),
        DecisionResult::Guard(GuardOutcome::Allow) => "allow".into(),
        DecisionResult::Guard(GuardOutcome::Veto(why)) => format!("VETO: {why}"),
        DecisionResult::Prompt(p) => format!("prompt ({} bytes)", p.len()),
        DecisionResult::Observed => "ok".into(),
        DecisionResult::Permit(p) => {
            let word = if p.allow { "allow" } else { "DENY" };
            format!("{word}{}", reason(&p.reason))
        }
        DecisionResult::Error { message, kind } => format!("error ({kind}): {message}"),
    };
    let tool = match &d.input {
        oneshot::store::DecisionInput::Permit { tool, .. } => format!(" {tool}"),
        _ => String::new(),
    };
    format!("{key}{tool}{builtin} -> {answer}")
}

/// RFC 3339 with milliseconds, UTC.
pub fn rfc3339(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_millis(t).to_string()
}

fn fmt_ts(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    let full = humantime::format_rfc3339_millis(t).to_string();
    // 2026-11-22T04:34:47.123Z → 04:34:47.123: the date rarely matters inside one session.
    full.get(11..23).unwrap_or(&full).to_string()
}

/// `s` on one line (whitespace runs become one space), cut to `max` characters with `…`.
pub fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    // Tasks and reasons may quote an agent: no control sequence reaches the terminal.
    let flat = super::sanitize::clean(&flat).into_owned();
    if flat.chars().count() > max {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        flat
    }
}
