//! `oneshot show [ID] [--iteration N] [--full] [--json]`: what each iteration of a session did —
//! the worker's prompt and account, what it changed, the auditor's answers and verdict, what the
//! agents spent. The thing a user reads after a run.

use super::account::{self, raw_prefix};
use super::show::session_or_latest;
use super::statusline::clock;
use anyhow::{Context, Result};
use oneshot::iterations::{Iteration, Run, RunLine};
use oneshot::session::{Role, Session};
use oneshot::store::{Log, Store};
use std::io::IsTerminal;
use std::time::Duration;

/// How many lines of a prompt, and of a run, are shown without `--full`.
const PROMPT_LINES: usize = 8;
const RUN_LINES: usize = 40;

/// What `show` was asked.
pub struct ShowArgs {
    /// The session (the latest without one).
    pub id: Option<String>,
    /// Only this iteration.
    pub iteration: Option<u32>,
    /// Prompts and runs whole.
    pub full: bool,
    /// One JSON object.
    pub json: bool,
}

/// `oneshot show`.
pub fn show(store: &Store, args: ShowArgs) -> Result<i32> {
    let dir = session_or_latest(store, args.id.as_deref(), "show the latest session")?;
    let session = dir.read_sealed_state()?;
    let log = Log::read(dir.log_path()).with_context(|| format!("read the log of {}", dir.id()))?;
    for w in &log.warnings {
        errln!("oneshot: warning: {w}");
    }
    let mut iterations = oneshot::iterations::read(&log);
    if let Some(n) = args.iteration {
        let count = iterations.len();
        iterations.retain(|i| i.number == n);
        if iterations.is_empty() {
            return Err(super::exit::usage(format!(
                "show iteration {n} of session {}: it has {} — ask for 1 to {count}",
                dir.id(),
                match count {
                    0 => "no iteration yet".to_string(),
                    1 => "one iteration".to_string(),
                    n => format!("{n} iterations"),
                },
            )));
        }
    }
    if args.json {
        let v = serde_json::json!({
            "session_id": session.id,
            "state": session.state(),
            "iteration_count": session.iteration,
            "max_iterations": session.max_iterations,
            "spent": session.agents.spent,
            "sandbox": session.sandbox,
            "env_dropped": session.env_dropped,
            "iterations": iterations,
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    let page = Page::new(args.full);
    page.header(&session);
    for it in &iterations {
        page.iteration(it);
    }
    Ok(0)
}

/// How the page is drawn.
struct Page {
    full: bool,
    colour: bool,
    width: usize,
}

impl Page {
    fn new(full: bool) -> Page {
        let terminal = std::io::stdout().is_terminal();
        Page {
            full,
            colour: terminal && super::color::on(),
            width: if terminal {
                terminal_size::terminal_size().map_or(100, |(w, _)| usize::from(w.0))
            } else {
                200
            },
        }
    }

    fn header(&self, s: &Session) {
        let took = clock(super::outcome::elapsed(s));
        let spent = super::cost::long(&s.agents.spent)
            .map(|c| format!(", {c}"))
            .unwrap_or_default();
        outln!(
            "session  {}  {}  ({} of {} iterations, {took}{spent})",
            s.id,
            super::color::state(s.state()),
            s.iteration,
            s.max_iterations
        );
        outln!("task     {}", super::show::one_line(&s.task, 100));
        if let Some(sandbox) = &s.sandbox {
            outln!("sandbox  {sandbox}");
        }
        if !s.env_dropped.is_empty() {
            outln!(
                "env      left out of the agents': {}",
                s.env_dropped.join(", ")
            );
        }
    }

    fn iteration(&self, it: &Iteration) {
        outln!("");
        outln!("iteration {}", it.number);
        for run in &it.worker {
            self.run(run);
        }
        if !it.changed_files.is_empty() {
            outln!("  changed  {}", it.changed_files.join(", "));
        }
        for run in &it.auditor {
            self.run(run);
        }
        if let Some(v) = &it.verdict {
            let reason = v
                .reason
                .as_deref()
                .map(|r| format!(": {}", super::sanitize::clean(r)))
                .unwrap_or_default();
            let confidence = v
                .confidence
                .map(|c| format!(" (confidence {c})"))
                .unwrap_or_default();
            outln!(
                "  verdict  {}{reason}{confidence}",
                v.verdict.to_uppercase()
            );
        }
        if let Some(o) = &it.outcome
            && !matches!(o, oneshot::session::Reason::Verdict { .. })
        {
            outln!("  then     {}", super::sanitize::clean(&o.to_string()));
        }
    }

    fn run(&self, run: &Run) {
        let mut about = vec![run.executor.clone()];
        if let Some(end) = run.ended_ms {
            let took = Duration::from_millis(end.saturating_sub(run.started_ms));
            // A run of a few seconds reads better with its tenths.
            about.push(if took < Duration::from_secs(10) {
                format!("{:.1}s", took.as_secs_f64())
            } else {
                clock(took)
            });
        }
        if let Some(spent) = super::cost::long(&run.spent) {
            about.push(spent);
        }
        match (run.exit_code, run.signal, run.ended_ms) {
            (Some(c), _, _) => about.push(format!("exit {c}")),
            (None, Some(s), _) => about.push(format!("signal {s}")),
            (None, None, None) => about.push("did not end".into()),
            _ => {}
        }
        let role = run.role;
        outln!("  {:<8} {}", role.as_str(), about.join(", "));
        if role == Role::Worker {
            self.prompt(&run.prompt);
        }
        let skip = if self.full || run.lines.len() <= RUN_LINES {
            0
        } else {
            run.lines.len() - RUN_LINES
        };
        if skip + run.earlier > 0 {
            outln!(
                "    … {} earlier line{} (`oneshot log` has them all)",
                skip + run.earlier,
                if skip + run.earlier == 1 { "" } else { "s" }
            );
        }
        let room = self.width.saturating_sub(4);
        for line in &run.lines[skip..] {
            let text = match line {
                RunLine::Entry { entry } => {
                    account::line(role, role.as_str(), entry, self.colour, room)
                }
                RunLine::Output { text, .. } => {
                    let prefix = raw_prefix(role, role.as_str(), self.colour);
                    format!("{prefix}{}", super::sanitize::clean(text))
                }
                RunLine::Message { text, .. }
                | RunLine::Turn { text, .. }
                | RunLine::Egress { text, .. } => {
                    format!("» {}", super::sanitize::clean(text))
                }
                // A kind of line newer than this listing: nothing to show for it.
                _ => continue,
            };
            outln!("    {text}");
        }
    }

    fn prompt(&self, prompt: &str) {
        let lines: Vec<&str> = prompt.lines().collect();
        let shown = if self.full {
            lines.len()
        } else {
            lines.len().min(PROMPT_LINES)
        };
        for (i, line) in lines[..shown].iter().enumerate() {
            let head = if i == 0 { "prompt" } else { "" };
            outln!("    {head:<7}{}", super::sanitize::clean(line));
        }
        if shown < lines.len() {
            outln!(
                "           … {} more line{} (--full)",
                lines.len() - shown,
                if lines.len() - shown == 1 { "" } else { "s" }
            );
        }
    }
}
