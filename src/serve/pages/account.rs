//! A session's log, as shipped to the job store, rendered for people: each agent's account
//! (what it said, each tool with its input and how it went — read back from its protocol lines
//! by [`AccountReader`], never shown as the protocol's JSON), the session's transitions, the
//! policy's decisions that decided something, the checks and what happened to each process.
//! The HTML twin of `oneshot job log`.

use super::html::{Esc, w};
use crate::agent::{AccountReader, Entry};
use crate::engine::Stream;
use crate::process::Role;
use crate::store::{Activity, Decoder, ProcessEvent, Record, SessionEvent};
use serde_json::Value;

/// How many lines of one burst of an agent's stderr are shown (a stack trace is one event).
const BURST: usize = 3;

/// Renders one session's records, in order, into an `<ol>` of lines. Each line names the store
/// entry that produced it (`data-entry`), so a page that a live stream extends can tell a line
/// it has from one it lacks (`crate::serve::live`): the lines an entry produces depend only on
/// the entries before it, so rendering from the start and from a cursor agree.
#[derive(Default)]
pub(crate) struct Account {
    /// The session whose log this is (the list's `data-session`).
    session: String,
    /// The store entry being rendered (`None`: the lines [`Account::finish`] flushes, which a
    /// later entry may complete, marked `pending`).
    entry: Option<u64>,
    decoder: Decoder,
    /// The reader of each role's agent run under way (`None`: a command, or no run yet).
    readers: [Option<AccountReader>; 2],
    /// Lines of the current stderr burst shown, and left out.
    burst: (usize, usize),
    out: String,
    lines: usize,
    /// What the agents' runs reported spending, summed.
    spent: crate::session::Spent,
    /// The policy's reloads the log tells of.
    reloads: super::policy::Reloads,
}

fn slot(role: Role) -> usize {
    match role {
        Role::Worker => 0,
        Role::Auditor => 1,
    }
}

/// `HH:MM:SS.mmm` of a record's time (the date rarely matters inside one session), with the
/// whole time as its tooltip.
fn stamp(ts: u64) -> String {
    let full = super::time::rfc3339(ts);
    let short = full.get(11..23).unwrap_or(&full);
    format!("<time datetime=\"{full}\" title=\"{full}\">{short}</time>")
}

impl Account {
    /// The account of session `session`, empty.
    pub(crate) fn of(session: &str) -> Account {
        Account {
            session: session.to_string(),
            ..Account::default()
        }
    }

    /// Adds store entry `seq`, one record as the store holds it (blobs resolved as they
    /// pass).
    pub(crate) fn record(&mut self, seq: u64, raw: &Value) {
        self.entry = Some(seq);
        match self.decoder.decode(raw.clone()) {
            Ok((record, _missing)) => self.render(&record),
            Err(e) => self.line(None, "warning", &format!("record skipped: {}", Esc(&e))),
        }
        self.entry = None;
    }

    /// The lines rendered since the last take (`<li>`s), leaving the account to go on.
    pub(crate) fn take(&mut self) -> String {
        std::mem::take(&mut self.out)
    }

    /// The policy's last reload and last refused reload, as the records so far tell.
    pub(crate) fn reloads(&self) -> super::policy::Reloads {
        self.reloads.clone()
    }

    /// The lines so far, the agents' last words flushed (as `pending` lines: the entry that
    /// completes them may still come), in the session's list.
    pub(crate) fn finish(mut self) -> String {
        for role in [Role::Worker, Role::Auditor] {
            self.flush(role, None, &format!("{role}"));
        }
        self.end_burst();
        let list = format!(
            "<ol class=\"account\" data-session=\"{}\">\n{}</ol>\n",
            Esc(&self.session),
            self.out
        );
        if self.lines == 0 {
            return format!(
                "<p class=\"empty\">Nothing in its log reads as an event for people.</p>\n{list}"
            );
        }
        let s = self.spent;
        let spent = if s == crate::session::Spent::default() {
            String::new()
        } else {
            format!(
                "<p class=\"spent\">The agents reported {} turn(s), {} tokens{}.</p>\n",
                s.turns,
                s.tokens,
                if s.usd > 0.0 {
                    format!(", ${:.4} (an estimate)", s.usd)
                } else {
                    String::new()
                }
            )
        };
        format!("{spent}{list}")
    }

    fn line(&mut self, ts: Option<u64>, class: &str, html: &str) {
        let time = ts.map(stamp).unwrap_or_default();
        match self.entry {
            Some(seq) => w!(
                self.out,
                "<li class=\"{class}\" data-entry=\"{seq}\">{time} {html}</li>\n"
            ),
            None => w!(
                self.out,
                "<li class=\"{class} pending\">{time} {html}</li>\n"
            ),
        }
        self.lines += 1;
    }

    fn who(role: Role, label: &str) -> String {
        format!("<span class=\"who role-{role}\">{}</span>", Esc(label))
    }

    fn render(&mut self, r: &Record) {
        let ts = r.ts();
        self.reloads.record(r);
        match r {
            Record::Activity(a) => self.activity(a),
            Record::Process(p) => {
                let label = format!("{}#{}", p.role, p.iteration);
                let what = match &p.event {
                    ProcessEvent::Started { process, prompt } => {
                        self.end_burst();
                        self.readers[slot(p.role)] = None;
                        format!(
                            "started, pid {} <details><summary>prompt</summary><pre>{}</pre></details>",
                            process.pid,
                            Esc(prompt)
                        )
                    }
                    ProcessEvent::Exited {
                        exit_code, signal, ..
                    } => {
                        self.flush(p.role, ts, &label);
                        self.end_burst();
                        match (exit_code, signal) {
                            (Some(c), _) => format!("exited with code {c}"),
                            (None, Some(s)) => format!("killed by signal {s}"),
                            _ => "ended".into(),
                        }
                    }
                    ProcessEvent::SpawnFailed { error } => {
                        format!("could not start: {}", Esc(error))
                    }
                    ProcessEvent::Stopping { reason } => format!("stopping ({reason})"),
                    ProcessEvent::Killed => "killed".into(),
                    ProcessEvent::Fenced { outcome } => Esc(outcome).to_string(),
                    ProcessEvent::AgentSession { session } => {
                        format!("agent session <code>{}</code>", Esc(&session.session_id))
                    }
                    ProcessEvent::AgentProgress { .. } => return,
                    ProcessEvent::AgentUsage { spent } => {
                        self.spent.turns += spent.turns;
                        self.spent.tokens += spent.tokens;
                        self.spent.usd += spent.usd;
                        format!(
                            "used {} turn(s), {} tokens{}",
                            spent.turns,
                            spent.tokens,
                            if spent.usd > 0.0 {
                                format!(", ${:.4} (estimate)", spent.usd)
                            } else {
                                String::new()
                            }
                        )
                    }
                    ProcessEvent::AgentFailed { failure } => format!(
                        "{} reported a failure ({}{}): {}",
                        failure.agent,
                        failure.kind.as_str(),
                        failure.status.map(|s| format!(" {s}")).unwrap_or_default(),
                        Esc(&failure.message)
                    ),
                };
                let who = Account::who(p.role, &label);
                self.line(ts, "process", &format!("{who} {what}"));
            }
            Record::StateChange(c) => {
                self.end_burst();
                let reason = c
                    .reason
                    .as_ref()
                    .map(|r| format!(" <span class=\"why\">({})</span>", Esc(&r.to_string())))
                    .unwrap_or_default();
                self.line(
                    ts,
                    "transition",
                    &format!("<b>{}</b> → <b>{}</b>{reason}", c.from, c.to),
                );
            }
            Record::Check(c) => {
                self.end_burst();
                let r = &c.result;
                let (class, word) = if r.passed() {
                    ("check ok", "passed")
                } else {
                    ("check failed", "failed")
                };
                let how = match (r.exit_code, r.signal, &r.stopped) {
                    (_, _, Some(s)) => format!("stopped: {}", Esc(s)),
                    (Some(c), _, None) => format!("exit {c}"),
                    (None, Some(s), None) => format!("signal {s}"),
                    _ => "ended".into(),
                };
                let tail = if r.tail.trim().is_empty() {
                    String::new()
                } else {
                    format!(
                        " <details><summary>output</summary><pre>{}</pre></details>",
                        Esc(&r.tail)
                    )
                };
                self.line(
                    ts,
                    class,
                    &format!(
                        "check <b>{}</b> {word} ({how}, {:.1}s) <code>{}</code>{tail}",
                        Esc(&r.name),
                        r.duration_ms as f64 / 1000.0,
                        Esc(&r.run)
                    ),
                );
            }
            // A built-in default that let things go on as usual decided nothing worth reading.
            Record::Decision(d) if d.builtin && super::hook::routine(&d.result) => {}
            Record::Decision(d) => {
                self.end_burst();
                let class = if d.result.is_error() {
                    "decision failed"
                } else {
                    "decision"
                };
                self.line(ts, class, &super::hook::line(d));
            }
            Record::Evidence(e) => self.line(
                ts,
                "note",
                &format!(
                    "evidence: {} changed file(s) ({})",
                    e.evidence.changed_files.len(),
                    Esc(&e.evidence.changes_source)
                ),
            ),
            Record::Interrupt(i) => self.line(
                ts,
                "warning",
                if i.force {
                    "interrupt (kill)"
                } else {
                    "interrupt"
                },
            ),
            Record::Session(s) => {
                let what = match &s.event {
                    SessionEvent::Created { .. } => "created",
                    SessionEvent::Resumed => "resumed",
                };
                self.line(ts, "session", &format!("session {what}"));
            }
            Record::Warning(m) => {
                self.line(ts, "warning", &format!("warning: {}", Esc(&m.message)));
            }
            Record::Note(m) => self.line(ts, "note", &format!("note: {}", Esc(&m.message))),
            Record::Message(m) => self.line(
                ts,
                "message",
                &Esc(&crate::session::record::message_line(m)).to_string(),
            ),
            Record::Turn(t) => self.line(
                ts,
                "turn",
                &Esc(&crate::session::record::turn_line(t)).to_string(),
            ),
            Record::Egress(e) => self.line(
                ts,
                "warning",
                &Esc(&crate::session::record::egress_line(e)).to_string(),
            ),
            Record::PolicyReload(p) => self.line(
                ts,
                "policy",
                &format!(
                    "policy reloaded: generation {} (<code>{}</code>)",
                    p.generation,
                    Esc(&p.policy_hash)
                ),
            ),
            Record::PolicyReloadFailed(p) => self.line(
                ts,
                "policy failed",
                &format!(
                    "policy edit not activated, generation {} keeps deciding: {}",
                    p.generation,
                    Esc(&p.message)
                ),
            ),
            Record::PolicyUntrusted(p) => self.line(
                ts,
                "policy failed",
                &format!("policy change waits for trust: {}", Esc(&p.message)),
            ),
            Record::PolicyLog(l) => self.line(
                ts,
                "policy",
                &format!(
                    "policy {} [{}]: {}",
                    Esc(&l.level),
                    Esc(&l.hook),
                    Esc(&l.message)
                ),
            ),
            // Blobs are text for other records; a kind newer than this page is skipped.
            _ => {}
        }
    }

    fn activity(&mut self, a: &Activity) {
        let label = format!("{}#{}", a.role, a.iteration);
        let text = match &a.data {
            Value::String(t) => t.clone(),
            v => v.to_string(),
        };
        let raw = |class: &str| {
            (
                class.to_string(),
                format!(
                    "{} <span class=\"raw\">{}</span>",
                    Account::who(a.role, &label),
                    Esc(&text)
                ),
            )
        };
        if a.stream == Stream::Stderr {
            if self.burst.0 < BURST {
                self.burst.0 += 1;
                let (class, html) = raw("stderr");
                self.line(Some(a.ts), &class, &html);
            } else {
                self.burst.1 += 1;
            }
            return;
        }
        if a.executor == "command" {
            let (class, html) = raw("output");
            self.end_burst();
            self.line(Some(a.ts), &class, &html);
            return;
        }
        if a.partial {
            // A piece of a line too long to parse as one: the raw log keeps it whole.
            return;
        }
        let s = slot(a.role);
        if self.readers[s].is_none() {
            self.readers[s] = AccountReader::for_executor(&a.executor, a.role);
        }
        let mut entries = Vec::new();
        match &mut self.readers[s] {
            Some(reader) => reader.line(&text, &mut entries),
            None => {
                let (class, html) = raw("output");
                self.line(Some(a.ts), &class, &html);
                return;
            }
        }
        self.entries(a.role, Some(a.ts), &label, entries);
    }

    fn flush(&mut self, role: Role, ts: Option<u64>, label: &str) {
        if let Some(reader) = &mut self.readers[slot(role)] {
            let mut entries = Vec::new();
            reader.flush(&mut entries);
            self.entries(role, ts, label, entries);
        }
    }

    fn entries(&mut self, role: Role, ts: Option<u64>, label: &str, entries: Vec<Entry>) {
        if entries.is_empty() {
            return;
        }
        self.end_burst();
        let who = Account::who(role, label);
        for e in entries {
            let (class, html) = match &e {
                Entry::Said { text } => {
                    ("said", format!("<span class=\"text\">{}</span>", Esc(text)))
                }
                Entry::Tool { name, input } => (
                    "tool",
                    format!("$ <b>{}</b> <code>{}</code>", Esc(name), Esc(input)),
                ),
                Entry::Outcome { ok, text } => {
                    let (class, word) = if *ok {
                        ("outcome ok", "ok")
                    } else {
                        ("outcome failed", "failed")
                    };
                    let text = if text.is_empty() {
                        String::new()
                    } else {
                        format!(": <span class=\"text\">{}</span>", Esc(text))
                    };
                    (class, format!("→ {word}{text}"))
                }
                Entry::Error { message } => ("error", format!("! {}", Esc(message))),
            };
            self.line(ts, class, &format!("{who} {html}"));
        }
    }

    fn end_burst(&mut self) {
        let hidden = std::mem::take(&mut self.burst.1);
        self.burst.0 = 0;
        if hidden > 0 {
            let s = if hidden == 1 { "" } else { "s" };
            self.line(
                None,
                "stderr",
                &format!("… {hidden} more line{s} on stderr (<code>oneshot job log --raw</code> shows them)"),
            );
        }
    }
}
