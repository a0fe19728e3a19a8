//! `oneshot status`, `list` and `log`: reading sessions without driving them.

use super::run::Exit;
use super::term::short_id;
use anyhow::Result;
use oneshot::store::{SessionDir, SessionFile, Store, StoreError, read_from, read_log};
use serde_json::Value;
use std::time::Duration;

fn store_err(e: StoreError) -> anyhow::Error {
    let code = match e {
        StoreError::NotFound { .. } | StoreError::Ambiguous { .. } => 2,
        _ => 1,
    };
    Exit(code, anyhow::Error::new(e)).into()
}

/// `oneshot status [ID] [--json]`.
pub fn status(store: &Store, id: Option<&str>, json: bool) -> Result<i32> {
    let dir = match id {
        Some(id) => store.open(id).map_err(store_err)?,
        None => match store.list().map_err(store_err)?.into_iter().next() {
            Some((dir, _)) => dir,
            None => {
                return Err(Exit(
                    2,
                    anyhow::anyhow!("no sessions under {}", store.root().display()),
                )
                .into());
            }
        },
    };
    if json {
        let text = std::fs::read_to_string(dir.state_path())?;
        print!("{text}");
        return Ok(0);
    }
    let file = dir.read_state().map_err(store_err)?;
    print_status(&file);
    Ok(0)
}

fn print_status(f: &SessionFile) {
    println!("session   {}", f.oneshot_id);
    println!("state     {}", f.state);
    println!("iteration {}/{}", f.iteration_count, f.max_iterations);
    println!("task      {}", one_line(&f.task, 100));
    println!("workdir   {}", f.workdir.display());
    println!(
        "policy    {} ({})",
        f.policy
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "built-in".into()),
        f.policy.hash
    );
    println!("created   {}", f.created_at);
    println!("updated   {}", f.updated_at);
    if let Some(v) = &f.last_verdict {
        println!(
            "verdict   {:?}{}",
            v.verdict,
            v.reason
                .as_deref()
                .map(|r| format!(": {}", one_line(r, 100)))
                .unwrap_or_default()
        );
    }
    if let Some(p) = &f.active_process {
        println!("running   {} pid {} (group {})", p.role, p.pid, p.pgid);
    }
    println!("history");
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
            line.push_str(&format!("  {}", one_line(r, 80)));
        }
        if let Some(d) = &h.detail {
            line.push_str(&format!(" — {}", one_line(d, 120)));
        }
        println!("{line}");
    }
}

/// `oneshot list [--json]`.
pub fn list(store: &Store, json: bool) -> Result<i32> {
    let sessions = store.list().map_err(store_err)?;
    if json {
        for (dir, file) in &sessions {
            let v = match file {
                Ok(f) => serde_json::json!({
                    "oneshot_id": f.oneshot_id, "state": f.state, "iteration_count": f.iteration_count,
                    "max_iterations": f.max_iterations, "created_at": f.created_at,
                    "updated_at": f.updated_at, "task": f.task,
                }),
                Err(e) => serde_json::json!({"oneshot_id": dir.id(), "error": e.to_string()}),
            };
            println!("{v}");
        }
        return Ok(0);
    }
    if sessions.is_empty() {
        eprintln!("no sessions under {}", store.root().display());
        return Ok(0);
    }
    println!(
        "{:<8}  {:<20}  {:>5}  {:<24}  TASK",
        "ID", "STATE", "ITER", "UPDATED"
    );
    for (dir, file) in &sessions {
        match file {
            Ok(f) => println!(
                "{:<8}  {:<20}  {:>5}  {:<24}  {}",
                short_id(&f.oneshot_id),
                f.state.as_str(),
                format!("{}/{}", f.iteration_count, f.max_iterations),
                f.updated_at,
                one_line(&f.task, 60)
            ),
            Err(e) => println!("{:<8}  unreadable: {e}", short_id(dir.id())),
        }
    }
    Ok(0)
}

/// `oneshot log ID [--follow] [--json]`.
pub fn log(store: &Store, id: &str, follow: bool, json: bool) -> Result<i32> {
    let dir = store.open(id).map_err(store_err)?;
    let path = dir.log_path();
    let print = |records: &[Value], warnings: &[String]| {
        for w in warnings {
            eprintln!("oneshot: warning: {w}");
        }
        for r in records {
            println!("{}", if json { r.to_string() } else { render(r) });
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
                eprintln!(
                    "oneshot: warning: {}: skipped a torn last line (oneshot was probably killed while writing)",
                    path.display()
                );
            }
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A session nobody drives any more: its lock is free. (Not "its state is terminal": the state
/// file is written before the last log records, so that would end the follow too early.)
fn finished(dir: &SessionDir) -> bool {
    dir.lock().is_ok()
}

fn render(r: &Value) -> String {
    let ts = r
        .get("ts")
        .and_then(Value::as_u64)
        .map(fmt_ts)
        .unwrap_or_default();
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    match s("type") {
        "activity" => {
            let data = match r.get("data") {
                Some(Value::String(t)) => t.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            };
            let iter = r.get("iteration").and_then(Value::as_u64).unwrap_or(0);
            format!("{ts} [{}#{iter}] {data}", s("role"))
        }
        "state_change" => {
            let mut line = format!("{ts} == {} -> {}", s("from"), s("to"));
            if !s("reason").is_empty() {
                line.push_str(&format!(" ({})", s("reason")));
            }
            if !s("detail").is_empty() {
                line.push_str(&format!(" — {}", s("detail")));
            }
            line
        }
        "process" => format!(
            "{ts} .. {} {} {}",
            s("role"),
            s("event"),
            r.get("pid").map(|p| format!("pid {p}")).unwrap_or_default()
        ),
        other => format!("{ts} {other}: {}", s("message")),
    }
}

fn fmt_ts(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    let full = humantime::format_rfc3339_millis(t).to_string();
    // 2026-11-22T04:34:47.123Z → 04:34:47.123: the date rarely matters inside one session.
    full.get(11..23).unwrap_or(&full).to_string()
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        flat
    }
}
