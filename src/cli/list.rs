//! `oneshot list [--json] [--limit N] [--state S]`: the sessions, newest first.

use super::exit::usage;
use super::show::{one_line, rfc3339};
use super::term::short_id;
use anyhow::Result;
use oneshot::error::failure;
use oneshot::machine::SessionState;
use oneshot::store::{Liveness, Store, Summary};

/// One `--state` word: a state name, or a group of states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFilter {
    /// Exactly this state.
    State(SessionState),
    /// Driven by a live oneshot now.
    Running,
    /// A step under way but no oneshot drives it (see [`Liveness::Stale`]).
    Stale,
    /// Between steps or INTERRUPTED, and no oneshot drives it (see [`Liveness::Paused`]).
    Paused,
    /// Not running, not ended: `oneshot resume ID` picks it up (stale or paused).
    Resumable,
    /// COMPLETED, FAILED or REJECTED.
    Terminal,
}

impl StateFilter {
    /// Whether a session in `state`, with this liveness, is kept.
    fn keeps(self, state: SessionState, live: Liveness) -> bool {
        match self {
            StateFilter::State(s) => s == state,
            StateFilter::Running => matches!(live, Liveness::Running { .. }),
            StateFilter::Stale => live == Liveness::Stale,
            StateFilter::Paused => live == Liveness::Paused,
            StateFilter::Resumable => live.resumable(),
            StateFilter::Terminal => state.is_terminal(),
        }
    }
}

/// The words `--state` takes besides the state names, for clap and for the error message.
const GROUPS: &str = "running, stale, paused, resumable (stale or paused), terminal (or done)";

/// Parses one `--state` word, case-insensitively (clap's value parser).
pub fn parse_state(word: &str) -> Result<StateFilter, String> {
    let lower = word.trim().to_ascii_lowercase();
    Ok(match lower.as_str() {
        "running" => StateFilter::Running,
        "stale" => StateFilter::Stale,
        "paused" => StateFilter::Paused,
        "resumable" => StateFilter::Resumable,
        "terminal" | "done" => StateFilter::Terminal,
        _ => match lower.to_ascii_uppercase().replace('-', "_").parse() {
            Ok(s) => StateFilter::State(s),
            Err(_) => {
                let names: Vec<&str> = SessionState::ALL.iter().map(|s| s.as_str()).collect();
                return Err(format!(
                    "unknown state `{word}`; use a state ({}) or one of {GROUPS}",
                    names.join(", ")
                ));
            }
        },
    })
}

/// What `list` was asked to show.
#[derive(Debug, Default)]
pub struct ListArgs {
    /// Print one JSON object per line.
    pub json: bool,
    /// At most this many sessions (the newest).
    pub limit: Option<usize>,
    /// Only sessions matching any of these; all when empty.
    pub states: Vec<StateFilter>,
}

/// `oneshot list`.
pub fn list(store: &Store, args: ListArgs) -> Result<i32> {
    if args.limit == Some(0) {
        return Err(usage(
            "list sessions: --limit 0 would show nothing; give 1 or more, or leave it out",
        ));
    }
    let filtered = !args.states.is_empty();
    let mut shown = 0usize;
    let mut header = false;
    for (dir, summary) in store.list()? {
        if args.limit.is_some_and(|n| shown >= n) {
            break;
        }
        let row = summary.map(|s| {
            let live = Liveness::of(s.state, &dir.lock_path());
            (s, live)
        });
        // A session whose state cannot be read matches no filter: its state is unknown.
        if filtered {
            let Ok((s, live)) = &row else { continue };
            if !args.states.iter().any(|f| f.keeps(s.state, *live)) {
                continue;
            }
        }
        shown += 1;
        if args.json {
            let v = match &row {
                Ok((s, live)) => json(s, *live),
                Err(e) => serde_json::json!({"session_id": dir.id(), "error": failure(e)}),
            };
            outln!("{v}");
            continue;
        }
        if !std::mem::replace(&mut header, true) {
            outln!(
                "{:<8}  {:<28}  {:>5}  {:>9}  {:<24}  TASK",
                "ID",
                "STATE",
                "ITER",
                "SPENT",
                "UPDATED"
            );
        }
        match &row {
            Ok((s, live)) => outln!(
                "{:<8}  {:<28}  {:>5}  {:>9}  {:<24}  {}",
                short_id(&s.id),
                state_column(s.state, *live),
                format!("{}/{}", s.iteration, s.max_iterations),
                super::cost::short(&s.spent),
                rfc3339(s.updated_ms),
                one_line(&s.task, 60)
            ),
            Err(e) => outln!("{:<8}  unreadable: {}", short_id(dir.id()), failure(e)),
        }
    }
    if shown == 0 && !args.json {
        if filtered {
            errln!("no sessions match under {}", store.root().display());
        } else {
            errln!("no sessions under {}", store.root().display());
        }
    }
    Ok(0)
}

/// The state, and `(stale)` when no oneshot drives a session that says a step is under way.
fn state_column(state: SessionState, live: Liveness) -> String {
    match live {
        Liveness::Stale => format!("{} (stale)", state.as_str()),
        _ => state.as_str().to_string(),
    }
}

/// One line of `list --json` (documented in docs/json.md).
fn json(s: &Summary, live: Liveness) -> serde_json::Value {
    serde_json::json!({
        "session_id": s.id, "state": s.state, "iteration_count": s.iteration,
        "max_iterations": s.max_iterations, "created_at": rfc3339(s.created_ms),
        "updated_at": rfc3339(s.updated_ms), "task": s.task,
        "liveness": live.as_str(), "stale": live == Liveness::Stale, "spent": s.spent,
        "pid": match live { Liveness::Running { pid } => Some(pid), _ => None },
    })
}
