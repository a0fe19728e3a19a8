//! `oneshot say ID MESSAGE`: a human's message to a session's worker. The library posts it
//! ([`oneshot::store::say`], which the dashboard can call too); this reads the text, waits a
//! moment for the oneshot that drives the session to hand it on, and says how it went.

use anyhow::{Context, Result};
use oneshot::session::{MessageStatus, Said, short_id as short};
use oneshot::store::{SessionDir, Store};
use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What `say` was asked to do.
#[derive(Debug, Clone)]
pub struct SayArgs {
    /// The session id or prefix.
    pub id: String,
    /// The message, when given on the command line (`-`: read stdin).
    pub text: Option<String>,
    /// Read the message from this file (`-`: stdin).
    pub file: Option<PathBuf>,
    /// Preempt the running turn.
    pub now: bool,
    /// How long to wait to hear how the message was handed on.
    pub wait: Duration,
}

/// Posts the message to session `args.id` — or, when no session has that id, records it for
/// the job that has it (`jobs`) — then reports where it went.
pub fn say(store: &Store, args: SayArgs, jobs: super::say_job::Jobs<'_>) -> Result<i32> {
    let text = read_text(&args)?;
    let dir = match store.open(&args.id) {
        Ok(dir) => dir,
        Err(e @ oneshot::store::StoreError::NotFound { .. }) => {
            return super::say_job::say(&args, &text, jobs, e);
        }
        Err(e) => return Err(e.into()),
    };
    let id = dir.id().to_string();
    let now_ms = super::job::now_ms();
    let said = oneshot::store::say(&dir, &text, args.now, &oneshot::job::verbs::actor(), now_ms)?;
    let driven = oneshot::store::holder_alive(&dir.lock_path());
    if !driven {
        outln!(
            "said to session {id} (message {}); nothing runs it now — its next worker prompt \
             carries the message (continue it with oneshot resume {id})",
            short(&said.id)
        );
        return Ok(0);
    }
    match wait_for(&dir, &said, args.wait) {
        Some(m) => outln!("{}", told(&format!("session {id}"), &id, &m)),
        None => outln!(
            "said to session {id} (message {}); its oneshot has not taken it in yet (waited {}) \
             — `oneshot log {id}` shows it when it does",
            short(&said.id),
            humantime::format_duration(args.wait)
        ),
    }
    Ok(0)
}

/// The message's text: the argument, the file, or stdin (`-` for either).
fn read_text(args: &SayArgs) -> Result<String> {
    let from_stdin = || -> Result<String> {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("read the message from stdin")?;
        Ok(s)
    };
    match (&args.text, &args.file) {
        (Some(_), Some(_)) => Err(super::exit::usage(
            "say: give the message as an argument or with --file, not both",
        )),
        (Some(t), None) if t == "-" => from_stdin(),
        (Some(t), None) => Ok(t.clone()),
        (None, Some(f)) if f.as_os_str() == "-" => from_stdin(),
        (None, Some(f)) => std::fs::read_to_string(f)
            .with_context(|| format!("read the message from {}", f.display())),
        (None, None) => Err(super::exit::usage(
            "say: what should the worker be told? give the message (oneshot say ID \"text\"), \
             --file FILE, or - to read it from stdin",
        )),
    }
}

/// Waits until the driving oneshot has handed the message on and, when it was sent, until the
/// worker took it in; after `wait`, where it stands (`None`: not handed on yet).
fn wait_for(dir: &SessionDir, said: &Said, wait: Duration) -> Option<Said> {
    let deadline = Instant::now() + wait;
    let mut seen = None;
    loop {
        let now = dir
            .read_state()
            .ok()
            .and_then(|s| s.messages.into_iter().find(|m| m.id == said.id));
        if let Some(m) = now {
            match m.status {
                MessageStatus::Received => {}
                MessageStatus::Sent => seen = Some(m),
                _ => return Some(m),
            }
        }
        if Instant::now() >= deadline {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How the message went, in words: said to `to` (`session ID`, `job J (session ID)`), whose
/// log is session `log`'s.
pub(super) fn told(to: &str, log: &str, m: &Said) -> String {
    let which = short(&m.id);
    match m.status {
        MessageStatus::Taken => {
            format!("said to {to}: the worker took message {which} in")
        }
        MessageStatus::Sent => format!(
            "said to {to}: message {which} was sent to the running worker, which has \
             not taken it in yet (it does at its next step; `oneshot log {log}` shows when)"
        ),
        MessageStatus::Held => format!(
            "said to {to}: message {which} is held until the worker's running turn ends (its \
             agent cannot take a message mid-turn, or --now interrupted a turn of its own for \
             it), then sent"
        ),
        MessageStatus::NextPrompt => format!(
            "said to {to}: the running worker cannot take a message mid-run; its next \
             prompt carries message {which}"
        ),
        MessageStatus::InPrompt => {
            format!("said to {to}: message {which} went into the worker's prompt")
        }
        MessageStatus::Received => format!("said to {to} (message {which})"),
        // The statuses may grow (`#[non_exhaustive]`): one not worded here is said by name.
        other => format!("said to {to} (message {which}: {})", other.as_str()),
    }
}
