//! `oneshot log [ID] [--follow] [--json] [--raw]`: a session's activity log for people — its
//! transitions, decisions, warnings, and what each agent did as its account (what it said, each
//! tool with its input and outcome), not the protocol JSON the log keeps (`--raw` shows that).

use super::account::{self, StderrBurst};
use super::show::{fmt_ts, one_line, session_or_latest};
use anyhow::Result;
use oneshot::agent::{AccountReader, Entry};
use oneshot::engine::Stream;
use oneshot::policy::GuardOutcome;
use oneshot::session::Role;
use oneshot::store::{
    Activity, DecisionRecord, DecisionResult, Decoder, ProcessEvent, Record, SessionDir, Store,
    holder_alive, read_from, read_log,
};
use serde_json::Value;
use std::io::IsTerminal;
use std::time::Duration;

/// How wide a line is when stdout is not a terminal (a pager, a file).
const PIPED_WIDTH: usize = 200;

/// `oneshot log [ID] [--follow] [--json] [--raw]`.
pub fn log(store: &Store, id: Option<&str>, follow: bool, json: bool, raw: bool) -> Result<i32> {
    let dir = session_or_latest(store, id, "show the latest session's log")?;
    let path = dir.log_path();
    let see_raw = format!(
        "`oneshot log {} --raw` shows them",
        super::term::short_id(dir.id())
    );
    let mut printer = Printer::new(raw, json, see_raw);
    let mut print = |records: &[Value], warnings: &[String]| printer.print(records, warnings);
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

/// Prints a session's log records for people — or, with `json`, as they are — decoding blobs
/// as it goes: what `oneshot log` and `oneshot job log` share. One per session's log.
pub(crate) struct Printer {
    decoder: Decoder,
    lines: Lines,
    json: bool,
}

impl Printer {
    /// A printer; `see_raw` names the command that shows what a burst of stderr left out.
    pub(crate) fn new(raw: bool, json: bool, see_raw: String) -> Printer {
        Printer {
            decoder: Decoder::default(),
            lines: Lines::new(raw, see_raw),
            json,
        }
    }

    /// Prints `records` in order, after the `warnings` a read gave.
    pub(crate) fn print(&mut self, records: &[Value], warnings: &[String]) {
        for w in warnings {
            errln!("oneshot: warning: {w}");
        }
        for r in records {
            if self.json {
                outln!("{r}");
                continue;
            }
            self.print_one(r);
        }
    }

    /// Prints one record for people (never as JSON).
    pub(crate) fn print_one(&mut self, r: &Value) {
        match self.decoder.decode(r.clone()) {
            Ok((record, _)) => {
                for line in self.lines.render(&record) {
                    outln!("{line}");
                }
            }
            Err(e) => errln!("oneshot: warning: {e}"),
        }
    }
}

/// Turns records into lines, reading each agent run's stdout into its account as it goes.
struct Lines {
    raw: bool,
    colour: bool,
    width: usize,
    /// The reader of the agent run under way, by role (`None`: a command, or no run yet).
    readers: [Option<AccountReader>; 2],
    burst: StderrBurst,
    /// The command that shows what a burst left out.
    see_raw: String,
}

impl Lines {
    fn new(raw: bool, see_raw: String) -> Lines {
        let terminal = std::io::stdout().is_terminal();
        let width = if terminal {
            terminal_size::terminal_size().map_or(100, |(w, _)| usize::from(w.0))
        } else {
            PIPED_WIDTH
        };
        Lines {
            raw,
            colour: terminal && super::color::on(),
            width,
            readers: [None, None],
            burst: StderrBurst::default(),
            see_raw,
        }
    }

    fn slot(role: Role) -> usize {
        match role {
            Role::Worker => 0,
            Role::Auditor => 1,
        }
    }

    /// The lines one record makes: none for what only machines read, several for an agent's
    /// line that completes several entries. Agent text is cleaned here: its control sequences
    /// (a title change, a clear screen) stay in the log, never reach the reader's terminal.
    fn render(&mut self, r: &Record) -> Vec<String> {
        let ts = r.ts().map(fmt_ts).unwrap_or_default();
        let mut out = Vec::new();
        match r {
            Record::Activity(a) => self.activity(&ts, a, &mut out),
            Record::Process(p) => {
                let slot = Lines::slot(p.role);
                match &p.event {
                    ProcessEvent::Started { .. } => {
                        self.end_burst(&mut out);
                        self.readers[slot] = None;
                    }
                    ProcessEvent::Exited { .. } => {
                        let label = format!("{}#{}", p.role, p.iteration);
                        if let Some(reader) = &mut self.readers[slot] {
                            let mut entries = Vec::new();
                            reader.flush(&mut entries);
                            self.entries(&ts, p.role, &label, entries, &mut out);
                        }
                        self.end_burst(&mut out);
                    }
                    _ => {}
                }
                if let Some(line) = render(r) {
                    out.push(super::sanitize::clean(&line).into_owned());
                }
            }
            other => {
                if let Some(line) = render(other) {
                    self.end_burst(&mut out);
                    out.push(super::sanitize::clean(&line).into_owned());
                }
            }
        }
        out
    }

    fn activity(&mut self, ts: &str, a: &Activity, out: &mut Vec<String>) {
        let text = match &a.data {
            Value::String(t) => t.clone(),
            v => v.to_string(),
        };
        let label = format!("{}#{}", a.role, a.iteration);
        let agent = !self.raw && a.executor != "command";
        let raw_line = |colour: bool| {
            let prefix = account::raw_prefix(a.role, &label, colour);
            format!("{ts} {prefix}{}", super::sanitize::clean(&text))
        };
        if !agent {
            out.push(raw_line(self.colour));
            return;
        }
        if a.stream == Stream::Stderr {
            if self.burst.show() {
                out.push(raw_line(self.colour));
            }
            return;
        }
        if a.partial {
            // A piece of a line too long to parse as one; the raw log keeps it whole.
            return;
        }
        let slot = Lines::slot(a.role);
        if self.readers[slot].is_none() {
            self.readers[slot] = AccountReader::for_executor(&a.executor, a.role);
        }
        let Some(reader) = &mut self.readers[slot] else {
            out.push(raw_line(self.colour));
            return;
        };
        let mut entries = Vec::new();
        reader.line(&text, &mut entries);
        self.entries(ts, a.role, &label, entries, out);
    }

    fn entries(
        &mut self,
        ts: &str,
        role: Role,
        label: &str,
        entries: Vec<Entry>,
        out: &mut Vec<String>,
    ) {
        if entries.is_empty() {
            return;
        }
        self.end_burst(out);
        let room = self.width.saturating_sub(ts.len() + 1);
        for e in entries {
            out.push(format!(
                "{ts} {}",
                account::line(role, label, &e, self.colour, room)
            ));
        }
    }

    fn end_burst(&mut self, out: &mut Vec<String>) {
        if let Some(more) = self.burst.end(&self.see_raw) {
            out.push(format!("             {more}"));
        }
    }
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
                // An event newer than this renderer: its name as recorded.
                other => serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v["event"].as_str().map(str::to_owned))
                    .unwrap_or_default(),
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
                _ => "event",
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
        Record::Message(m) => format!("{ts} {}", oneshot::session::record::message_line(m)),
        Record::Turn(t) => format!("{ts} {}", oneshot::session::record::turn_line(t)),
        Record::Egress(e) => format!("{ts} !! {}", oneshot::session::record::egress_line(e)),
        // A kind newer than this renderer: skipped, like one it reads as unknown.
        _ => return None,
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
            oneshot::policy::verdict_word(v.verdict).to_uppercase(),
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
        DecisionResult::Egress(None) => "default (refused)".into(),
        DecisionResult::Egress(Some(e)) => {
            let word = if e.allow { "allow" } else { "DENY" };
            format!("{word}{}", reason(&e.reason))
        }
        DecisionResult::Error { message, kind } => format!("error ({kind}): {message}"),
        // An answer newer than this renderer: as recorded.
        other => format!("{other:?}"),
    };
    let tool = match &d.input {
        oneshot::store::DecisionInput::Permit { tool, .. } => format!(" {tool}"),
        oneshot::store::DecisionInput::Egress { host, port, .. } => format!(" {host}:{port}"),
        _ => String::new(),
    };
    format!("{key}{tool}{builtin} -> {answer}")
}
