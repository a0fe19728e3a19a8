//! The session inside EXECUTING: made from the job's spec, run on this thread, read back into
//! a [`SessionEnd`]; and recovery, which decides whether a failed execution's session can go
//! on.

use super::RunnerOptions;
use crate::agent::AgentSpec;
use crate::engine::{Engine, Observer, Options, SessionBuilder, Update};
use crate::job::record::{JobSpec, Workspace};
use crate::job::step::{Found, JobJudge, RunnerEvent, SessionEnd, SessionOutcome};
use crate::policy::{
    ApprovalJob, ApprovalResult, ApproveDecision, PolicyHost, PolicyOptions, PolicyService,
    RetryLimits,
};
use crate::session::Session;
use crate::store::Store;
use std::path::{Path, PathBuf};

/// The worker's final message is kept up to this many bytes (its end) in the artifact.
const FINAL_MESSAGE: usize = 4096;

/// Who plays a role, as a job's spec names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Player {
    /// An agent CLI, driven over its protocol.
    Agent(AgentSpec),
    /// A command line.
    Command(String),
}

impl Player {
    /// Reads `AGENT[:MODEL]` or `cmd:COMMAND LINE`.
    pub fn parse(text: &str) -> Result<Player, String> {
        match text.strip_prefix("cmd:") {
            Some(line) if line.trim().is_empty() => {
                Err("`cmd:` needs a command line after it, e.g. `cmd:sh check.sh`".into())
            }
            Some(line) => Ok(Player::Command(line.trim().to_string())),
            None => AgentSpec::parse(text)
                .map(Player::Agent)
                .map_err(|e| e.to_string()),
        }
    }
}

/// The job's policy for a step's own judgements — `limits.retry` after a failure, the panel's
/// hooks, `approve` at harvest — loaded when the step first asks it something, on a thread of
/// its own ([`PolicyService`]: the panel's asks may run anywhere), shared by the panel and the
/// `approve` that follows it, and let go once the judgement is made: the step then runs a
/// session for minutes, or ends, and a thousand steps must not keep a thousand idle threads.
/// Its hash goes into every decision record; `limits.retry` is read once per step. The session
/// holds a copy of its own: it reloads the policy as the file changes, in the middle of its run.
///
/// Loaded late, the judge also sees the policy as it is when it decides — the hot-reload rule
/// sessions follow.
pub(super) struct JobPolicy {
    /// The job's policy file; `None` for the built-in policy.
    path: Option<PathBuf>,
    /// The policy while a judgement needs it.
    served: std::cell::RefCell<Option<Result<PolicyService, String>>>,
    /// The hash of the policy as last loaded, for the decision records.
    hash: std::cell::RefCell<Option<String>>,
    /// `limits.retry`, as first read in this step.
    retry: std::cell::Cell<Option<RetryLimits>>,
}

impl JobPolicy {
    pub(super) fn new(spec: &JobSpec) -> JobPolicy {
        JobPolicy {
            path: spec.policy.clone(),
            served: std::cell::RefCell::new(None),
            hash: std::cell::RefCell::new(None),
            retry: std::cell::Cell::new(None),
        }
    }

    pub(super) fn judge(&self) -> PolicyJudge<'_> {
        PolicyJudge { policy: self }
    }

    /// The policy, loaded if no judgement holds it now; why not, when it does not load.
    pub(super) fn service(&self) -> Result<PolicyService, String> {
        if let Some(held) = &*self.served.borrow() {
            return held.clone();
        }
        let loaded = PolicyService::start_blocking(self.path.clone(), PolicyOptions::default())
            .map_err(|e| crate::error::failure(&e));
        if let Ok(s) = &loaded {
            *self.hash.borrow_mut() = Some(s.hash().to_string());
        }
        *self.served.borrow_mut() = Some(loaded.clone());
        loaded
    }

    /// Lets the policy go: its thread ends once nobody holds a handle.
    fn release(&self) {
        self.served.borrow_mut().take();
    }
}

/// The job's policy, loaded anew for a session (a `PolicyHost` holds its own Lua state).
fn fresh(policy: Option<&Path>) -> Result<PolicyHost, String> {
    PolicyHost::load_or_builtin(policy, PolicyOptions::default()).map_err(|e| e.to_string())
}

/// The job's policy deciding a step.
pub(super) struct PolicyJudge<'a> {
    policy: &'a JobPolicy,
}

impl JobJudge for PolicyJudge<'_> {
    fn approve(
        &mut self,
        result: &ApprovalResult,
        job: &ApprovalJob,
    ) -> Result<ApproveDecision, String> {
        let answer = match self.policy.service() {
            Ok(mut served) => JobJudge::approve(&mut served, result, job),
            Err(e) => Err(format!("the job's policy does not load: {e}")),
        };
        // The step's last judgement.
        self.policy.release();
        answer
    }

    fn retry(&self) -> RetryLimits {
        if let Some(limits) = self.policy.retry.get() {
            return limits;
        }
        let limits = match self.policy.service() {
            Ok(served) => JobJudge::retry(&served),
            Err(_) => RetryLimits::default(),
        };
        self.policy.retry.set(Some(limits));
        // A session runs next, for minutes: nothing to hold the policy for meanwhile.
        self.policy.release();
        limits
    }

    fn policy_hash(&self) -> Option<String> {
        self.policy.hash.borrow().clone()
    }
}

/// Makes the step's session — a new one with `prompt` in `ws`, or opens `resume` — and keeps
/// its engine in `slot` to run: `SessionMade`, or `SessionEnded` (not started) when it cannot
/// be made.
pub(super) fn make(
    spec: &JobSpec,
    ws: &Workspace,
    prompt: String,
    resume: Option<String>,
    opts: &RunnerOptions,
    slot: &mut Option<Engine>,
) -> RunnerEvent {
    let sessions = Store::new(&opts.state_dir);
    let made = match &resume {
        Some(id) => Engine::resume(&sessions, id, None, Options::default()),
        None => create(spec, ws, prompt, &sessions),
    };
    match made {
        Ok(engine) => {
            let session = engine.id().to_string();
            *slot = Some(engine);
            RunnerEvent::SessionMade { session }
        }
        Err(e) => {
            RunnerEvent::SessionEnded(not_started(resume.as_deref().unwrap_or("-"), e.to_string()))
        }
    }
}

/// Runs the session [`make`] kept to its end, telling the runner's caller its updates.
pub(super) async fn run(job: &str, engine: &mut Engine, opts: &RunnerOptions) -> RunnerEvent {
    let session = engine.id().to_string();
    let mut told = ToNotes {
        job,
        session: &session,
        opts,
    };
    let ran = engine.run(&mut told).await;
    let mut end = end_of(engine.session());
    if let Err(e) = ran {
        // The engine broke under the session: its state is wherever it stopped.
        end.outcome = SessionOutcome::Broke(engine.session().state());
        end.reason = Some(e.to_string());
    }
    RunnerEvent::SessionEnded(end)
}

/// Passes a session's updates on to the runner's caller as [`super::Note::Session`].
struct ToNotes<'a> {
    job: &'a str,
    session: &'a str,
    opts: &'a RunnerOptions,
}

impl Observer for ToNotes<'_> {
    fn update(&mut self, update: Update) {
        // A stalled agent, a budget at 80 %: sent from here (`crate::notify`).
        if let Some(n) = &self.opts.notify {
            n.session(self.job, self.session, &update);
        }
        (self.opts.on_note)(&super::Note::Session {
            job: self.job.to_string(),
            update,
        });
    }

    fn wants_output(&self) -> bool {
        self.opts.session_output
    }
}

fn create(
    spec: &JobSpec,
    ws: &Workspace,
    prompt: String,
    sessions: &Store,
) -> Result<Engine, crate::engine::EngineError> {
    let usage = crate::engine::EngineError::Usage;
    let mut b = SessionBuilder::new(prompt).workdir(&ws.path);
    b = match Player::parse(&spec.worker).map_err(usage)? {
        Player::Agent(a) => b.worker_agent(a),
        Player::Command(c) => b.worker(c),
    };
    b = match Player::parse(&spec.auditor).map_err(usage)? {
        Player::Agent(a) => b.auditor_agent(a),
        Player::Command(c) => b.auditor(c),
    };
    let policy = fresh(spec.policy.as_deref()).map_err(usage)?;
    b = b.options(Options {
        checks: spec.checks.clone(),
        ..Options::default()
    });
    b.policy(policy).create(sessions)
}

/// What recovery finds of a failed execution's session: nothing (none was recorded, or it
/// never reached the disk), the session as it rests, or that it cannot be read. The core
/// decides what follows.
pub(super) fn inspect(session: Option<&str>, state_dir: &Path) -> RunnerEvent {
    let Some(id) = session else {
        return RunnerEvent::Inspected(Found::Nothing);
    };
    let sessions = Store::new(state_dir);
    RunnerEvent::Inspected(match sessions.open(id).and_then(|d| d.read_state()) {
        Ok(s) => Found::Session(end_of(&s)),
        Err(crate::store::StoreError::NotFound { .. }) => Found::Nothing,
        Err(e) => Found::Unreadable {
            reason: format!("session {id} cannot be read: {e}"),
        },
    })
}

/// How session `id` ended, read from its state file.
pub(super) fn read_end(id: &str, state_dir: &Path) -> RunnerEvent {
    let sessions = Store::new(state_dir);
    RunnerEvent::SessionEnded(match sessions.open(id).and_then(|d| d.read_state()) {
        Ok(s) => end_of(&s),
        Err(e) => not_started(id, format!("session {id} cannot be read: {e}")),
    })
}

/// A session's end as the job sees it.
fn end_of(s: &Session) -> SessionEnd {
    let state = s.state();
    let verdict = s.last_verdict.as_ref();
    SessionEnd {
        session: s.id.clone(),
        outcome: SessionOutcome::Ended(state),
        reason: s.last_reason().map(|r| r.to_string()),
        verdict: verdict.map(|v| verdict_word(v.verdict).to_string()),
        confidence: verdict.and_then(|v| v.confidence),
        findings: verdict.map(|v| v.open_criteria.clone()).unwrap_or_default(),
        final_message: final_message(&s.worker_output),
    }
}

/// The end of the worker's output, as much as an artifact keeps.
pub(super) fn final_message(out: &str) -> String {
    let mut cut = out.len().saturating_sub(FINAL_MESSAGE);
    while !out.is_char_boundary(cut) {
        cut += 1;
    }
    out[cut..].trim().to_string()
}

/// A session that could not start: nothing to retry, a human must look.
fn not_started(id: &str, reason: String) -> SessionEnd {
    SessionEnd {
        session: id.to_string(),
        outcome: SessionOutcome::NotStarted,
        reason: Some(reason),
        verdict: None,
        confidence: None,
        findings: Vec::new(),
        final_message: String::new(),
    }
}

/// A verdict as a policy writes it.
pub(super) fn verdict_word(v: crate::machine::Verdict) -> &'static str {
    match v {
        crate::machine::Verdict::Done => "done",
        crate::machine::Verdict::Retry => "retry",
        crate::machine::Verdict::Impossible => "impossible",
    }
}

/// What running a session that was never made answers: a bug of the runner, said as a
/// session that could not start (a human looks), never a silent success.
pub(super) fn never_made() -> RunnerEvent {
    RunnerEvent::SessionEnded(not_started(
        "-",
        "internal error: the runner was asked to run a session it had not made".into(),
    ))
}
