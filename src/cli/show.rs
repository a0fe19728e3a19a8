//! `oneshot status`: reading one session without driving it (and the formatting `list`, `log`
//! and `prune` share).

use super::exit::usage;
use anyhow::{Context, Result};
use oneshot::session::{Phase, Session};
use oneshot::store::{Liveness, SessionDir, Store};
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
        // The file keeps the seed's `oneshot_id` (its format); the output names the id for
        // what it is, as every `--json` does.
        if let Some(id) = map.remove("oneshot_id") {
            map.insert("session_id".into(), id);
        }
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
    if let Some(sandbox) = &f.sandbox {
        outln!("sandbox   {sandbox}");
    }
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
        match &p.retake {
            Some(at) => outln!(
                "paused    while the policy decided in {} ({}); a resume asks it again",
                at.state(),
                p.cause
            ),
            None => outln!("paused    during the {} ({})", p.during, p.cause),
        }
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

/// RFC 3339 with milliseconds, UTC.
pub fn rfc3339(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_millis(t).to_string()
}

pub fn fmt_ts(ms: u64) -> String {
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
