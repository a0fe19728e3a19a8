//! The session value: everything the decision core knows about one session, and (serialized
//! through [`Wire`]) the state file `oneshot.json`.

use super::history::{HistoryEntry, PolicyRef, VerdictRecord};
use super::phase::Phase;
use crate::machine::SessionState;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::path::PathBuf;

/// The format version of `oneshot.json` written by this build; other versions are refused
/// with a message rather than misread.
pub const SCHEMA_VERSION: u32 = 2;

/// How many refused connections a session keeps for `ctx.egress` (the log keeps them all): an
/// agent retrying a closed host in a loop must not grow the state file or every hook's `ctx`
/// without bound.
pub const MAX_EGRESS: usize = 256;

/// How long the one-line `title` of the task is at most (what `oneshot list` shows).
const TITLE_CHARS: usize = 120;

/// One session: its facts, its phase and its history.
///
/// Changed only by [`Session::step`](super::Session::step); written to `oneshot.json` whenever
/// a step asks for [`Effect::Journal`](super::Effect::Journal).
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// The session id (a UUID).
    pub id: String,
    /// Where the session is, with that state's data.
    pub phase: Phase,
    /// The worker iteration in progress or last run (1-based; 0 before the first run).
    pub iteration: u32,
    /// The iteration budget in force (the policy's `limits.max_iterations`).
    pub max_iterations: u32,
    /// Creation time, unix milliseconds.
    pub created_ms: u64,
    /// Time of the last change, unix milliseconds.
    pub updated_ms: u64,
    /// The task as the user gave it.
    pub task: String,
    /// The directory the agents run in (absolute).
    pub workdir: PathBuf,
    /// The worker command line, as given.
    pub worker_cmd: String,
    /// The auditor command line, as given.
    pub auditor_cmd: String,
    /// The agents playing the roles, and their own session ids.
    pub agents: super::Agents,
    /// The policy in force.
    pub policy: PolicyRef,
    /// How the policy is run (budget, module path, reload mode): what a resume keeps.
    pub settings: super::SessionSettings,
    /// How its agents were confined the last time it ran (`None` before it ran).
    pub sandbox: Option<super::Sandbox>,
    /// The worker's prompt for the current iteration.
    pub worker_prompt: String,
    /// Tail of the worker's last output (redacted).
    pub worker_output: String,
    /// Tail of the auditor's last stdout, its answer (redacted); never its stderr.
    pub auditor_output: String,
    /// Exit code of the process that ended last, when it exited normally.
    pub exit_code: Option<i32>,
    /// Files the last worker run changed (workdir-relative).
    pub changed_files: Vec<String>,
    /// The auditor's last verdict.
    pub last_verdict: Option<VerdictRecord>,
    /// What the last audit's checks found (`ctx.checks`), in the order they ran.
    pub checks: Vec<crate::check::CheckResult>,
    /// Every state the session has been in, oldest first.
    pub history: Vec<HistoryEntry>,
    /// The humans' messages to its worker (`oneshot say`), oldest first.
    pub messages: Vec<super::Said>,
    /// The connections the egress proxy refused its agents, oldest first, at most
    /// [`MAX_EGRESS`] (the newest): what hooks read as `ctx.egress`.
    pub egress: Vec<crate::session::record::EgressRefusal>,
    /// The variables of oneshot's environment left out of its agents' (credentials), as last
    /// started: what `show` lists.
    pub env_dropped: Vec<String>,
    /// Interrupts received by this oneshot process (not persisted: a resume starts at zero).
    pub(crate) interrupts: u32,
    /// The answer the core waits for (not persisted: a resume waits for nothing).
    pub(crate) awaiting: Option<super::step::Awaiting>,
}

/// What a new session is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSession {
    /// The id (a UUID).
    pub id: String,
    /// The task.
    pub task: String,
    /// The workdir (absolute).
    pub workdir: PathBuf,
    /// The worker command line.
    pub worker_cmd: String,
    /// The auditor command line.
    pub auditor_cmd: String,
}

impl Session {
    /// A session in CREATED, decided by `policy` with `max_iterations`, created at `now`.
    pub fn new(spec: NewSession, policy: PolicyRef, max_iterations: u32, now: u64) -> Session {
        let first = HistoryEntry {
            state: SessionState::Created,
            ts: now,
            reason: None,
            pid: None,
            iteration: 0,
            policy_hash: policy.hash.clone(),
            generation: policy.generation,
        };
        Session {
            id: spec.id,
            phase: Phase::Created,
            iteration: 0,
            max_iterations,
            created_ms: now,
            updated_ms: now,
            task: spec.task,
            workdir: spec.workdir,
            worker_cmd: spec.worker_cmd,
            auditor_cmd: spec.auditor_cmd,
            agents: super::Agents::default(),
            policy,
            settings: super::SessionSettings::default(),
            sandbox: None,
            worker_prompt: String::new(),
            worker_output: String::new(),
            auditor_output: String::new(),
            exit_code: None,
            changed_files: Vec::new(),
            last_verdict: None,
            checks: Vec::new(),
            history: vec![first],
            messages: Vec::new(),
            egress: Vec::new(),
            env_dropped: Vec::new(),
            interrupts: 0,
            awaiting: None,
        }
    }

    /// Keeps a refused connection for `ctx.egress` (the newest [`MAX_EGRESS`]). The caller
    /// also writes it to the log as a `Record::Egress`, and journals the session.
    pub fn note_egress(&mut self, refusal: crate::session::record::EgressRefusal) {
        if self.egress.len() >= MAX_EGRESS {
            let extra = self.egress.len() + 1 - MAX_EGRESS;
            self.egress.drain(..extra);
        }
        self.egress.push(refusal);
    }

    /// The state of the seed's table.
    pub fn state(&self) -> SessionState {
        self.phase.state()
    }

    /// The reason of the last history entry.
    pub fn last_reason(&self) -> Option<&super::Reason> {
        self.history.last().and_then(|h| h.reason.as_ref())
    }

    /// The first line of the task, shortened: what a listing shows.
    pub fn title(&self) -> String {
        title(&self.task)
    }
}

/// The first non-empty line of `task`, at most [`TITLE_CHARS`] characters.
fn title(task: &str) -> String {
    let line = task.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line = line.trim();
    if line.chars().count() <= TITLE_CHARS {
        return line.to_string();
    }
    let mut out: String = line.chars().take(TITLE_CHARS - 1).collect();
    out.push('…');
    out
}

/// The state file's layout. The fields a listing needs come first, so a reader can stop after
/// a few hundred bytes (the store's `Summary`); the seed's names (`oneshot_id`, `state`,
/// `iteration_count`, `max_iterations`, `created_at`, `updated_at`, `history`) are kept.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    schema: u32,
    oneshot_id: std::borrow::Cow<'a, str>,
    state: SessionState,
    iteration_count: u32,
    max_iterations: u32,
    created_at: String,
    updated_at: String,
    title: String,
    created_ms: u64,
    updated_ms: u64,
    /// What the agents reported using; absent in files written before it moved here (then
    /// `agents.spent`).
    #[serde(default)]
    spent: Option<super::Spent>,
    workdir: std::borrow::Cow<'a, std::path::Path>,
    policy: std::borrow::Cow<'a, PolicyRef>,
    /// Absent in files written before it existed: the defaults.
    #[serde(default)]
    settings: std::borrow::Cow<'a, super::SessionSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sandbox: Option<std::borrow::Cow<'a, super::Sandbox>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_verdict: Option<std::borrow::Cow<'a, VerdictRecord>>,
    #[serde(default)]
    changed_files: std::borrow::Cow<'a, [String]>,
    #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
    checks: std::borrow::Cow<'a, [crate::check::CheckResult]>,
    worker_cmd: std::borrow::Cow<'a, str>,
    auditor_cmd: std::borrow::Cow<'a, str>,
    /// Absent when no role is played by an agent CLI.
    #[serde(default, skip_serializing_if = "agents_empty")]
    agents: std::borrow::Cow<'a, super::Agents>,
    task: std::borrow::Cow<'a, str>,
    #[serde(default)]
    worker_prompt: std::borrow::Cow<'a, str>,
    #[serde(default)]
    worker_output_tail: std::borrow::Cow<'a, str>,
    #[serde(default)]
    auditor_output_tail: std::borrow::Cow<'a, str>,
    #[serde(default)]
    phase: Value,
    history: std::borrow::Cow<'a, [HistoryEntry]>,
    /// Absent in files written before messages existed, and when there are none.
    #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
    messages: std::borrow::Cow<'a, [super::Said]>,
    /// Absent in files written before the egress proxy existed, and when nothing was refused.
    #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
    egress: std::borrow::Cow<'a, [crate::session::record::EgressRefusal]>,
    /// Absent in files written before the environment was filtered, and when nothing was left
    /// out.
    #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
    env_dropped: std::borrow::Cow<'a, [String]>,
}

#[allow(clippy::ptr_arg)] // serde's skip_serializing_if passes the field as it is.
fn agents_empty(a: &std::borrow::Cow<'_, super::Agents>) -> bool {
    // `spent` is written at the top level.
    super::Agents {
        spent: super::Spent::default(),
        ..a.as_ref().clone()
    }
    .is_empty()
}

/// RFC 3339 with milliseconds, UTC.
pub(crate) fn rfc3339(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(t).to_string()
}

impl Serialize for Session {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use std::borrow::Cow::Borrowed;
        Wire {
            schema: SCHEMA_VERSION,
            oneshot_id: Borrowed(&self.id),
            state: self.state(),
            iteration_count: self.iteration,
            max_iterations: self.max_iterations,
            created_at: rfc3339(self.created_ms),
            updated_at: rfc3339(self.updated_ms),
            title: self.title(),
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
            spent: Some(self.agents.spent),
            workdir: Borrowed(&self.workdir),
            policy: Borrowed(&self.policy),
            settings: Borrowed(&self.settings),
            sandbox: self.sandbox.as_ref().map(Borrowed),
            exit_code: self.exit_code,
            last_verdict: self.last_verdict.as_ref().map(Borrowed),
            changed_files: Borrowed(&self.changed_files),
            checks: Borrowed(&self.checks),
            worker_cmd: Borrowed(&self.worker_cmd),
            auditor_cmd: Borrowed(&self.auditor_cmd),
            agents: Borrowed(&self.agents),
            task: Borrowed(&self.task),
            worker_prompt: Borrowed(&self.worker_prompt),
            worker_output_tail: Borrowed(&self.worker_output),
            auditor_output_tail: Borrowed(&self.auditor_output),
            phase: self.phase.data(),
            history: Borrowed(&self.history),
            messages: Borrowed(&self.messages),
            egress: Borrowed(&self.egress),
            env_dropped: Borrowed(&self.env_dropped),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Session {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Session, D::Error> {
        use serde::de::Error;
        let w = Wire::deserialize(d)?;
        if w.schema != SCHEMA_VERSION {
            return Err(D::Error::custom(format!(
                "schema {} (this oneshot reads schema {SCHEMA_VERSION})",
                w.schema
            )));
        }
        let phase = Phase::from_parts(w.state, w.phase).map_err(D::Error::custom)?;
        let mut agents = w.agents.into_owned();
        if let Some(spent) = w.spent {
            agents.spent = spent;
        }
        Ok(Session {
            id: w.oneshot_id.into_owned(),
            phase,
            iteration: w.iteration_count,
            max_iterations: w.max_iterations,
            created_ms: w.created_ms,
            updated_ms: w.updated_ms,
            task: w.task.into_owned(),
            workdir: w.workdir.into_owned(),
            worker_cmd: w.worker_cmd.into_owned(),
            auditor_cmd: w.auditor_cmd.into_owned(),
            agents,
            policy: w.policy.into_owned(),
            settings: w.settings.into_owned(),
            sandbox: w.sandbox.map(|s| s.into_owned()),
            worker_prompt: w.worker_prompt.into_owned(),
            worker_output: w.worker_output_tail.into_owned(),
            auditor_output: w.auditor_output_tail.into_owned(),
            exit_code: w.exit_code,
            changed_files: w.changed_files.into_owned(),
            last_verdict: w.last_verdict.map(|v| v.into_owned()),
            checks: w.checks.into_owned(),
            history: w.history.into_owned(),
            messages: w.messages.into_owned(),
            egress: w.egress.into_owned(),
            env_dropped: w.env_dropped.into_owned(),
            interrupts: 0,
            awaiting: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Session {
        Session::new(
            NewSession {
                id: "00000000-0000-4000-8000-000000000001".into(),
                task: "\n  fix the parser  \nand the tests".into(),
                workdir: "/work".into(),
                worker_cmd: "sh w.sh".into(),
                auditor_cmd: "sh a.sh".into(),
            },
            PolicyRef {
                path: None,
                hash: "builtin".into(),
                generation: 1,
                budget: None,
            },
            5,
            1_700_000_000_000,
        )
    }

    #[test]
    fn the_state_file_round_trips() {
        let s = sample();
        let json = serde_json::to_string_pretty(&s).unwrap();
        let back: Session = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["state"], "CREATED");
        assert_eq!(v["title"], "fix the parser");
        assert_eq!(v["created_at"], "2023-11-14T22:13:20.000Z");
    }

    #[test]
    fn summary_fields_come_first() {
        let json = serde_json::to_string(&sample()).unwrap();
        let at = |k: &str| json.find(&format!("\"{k}\"")).unwrap();
        assert!(at("state") < at("task") && at("title") < at("task") && at("task") < at("history"));
    }

    #[test]
    fn another_schema_is_refused_by_name() {
        let mut v: Value = serde_json::to_value(sample()).unwrap();
        v["schema"] = 1.into();
        let e = serde_json::from_value::<Session>(v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("schema 1"), "{e}");
    }

    #[test]
    fn long_titles_are_cut() {
        let t = title(&"x".repeat(500));
        assert_eq!(t.chars().count(), TITLE_CHARS);
        assert!(t.ends_with('…'));
    }
}
