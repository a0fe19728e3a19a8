//! The engine: one session, its files, its policy, and the loop that drives it.

use super::ctx::{hook_ctx, now_ms, rfc3339_now};
use super::records::Note;
use super::slot::{reloading, trust_store, vet_changed_policy};
use super::{EngineError, EngineOptions, Outcome, Reporter, SessionSpec, Status};
use crate::executor::CommandTemplate;
use crate::machine::{Event, SessionState};
use crate::pipeline::Redactor;
use crate::policy::{PolicyHost, ReloadingPolicy};
use crate::store::{
    LogWriter, PolicyRef, SCHEMA_VERSION, SessionDir, SessionFile, SessionLock, Store,
};
use globset::GlobSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Drives one session. Holds the session's lock for as long as it lives.
pub struct Engine {
    pub(super) dir: SessionDir,
    _lock: SessionLock,
    pub(super) file: SessionFile,
    /// The policy, hot-reloaded between hook calls (see [`Engine::refresh_policy`]).
    pub(super) slot: ReloadingPolicy,
    pub(super) redactor: Arc<Redactor>,
    pub(super) log: LogWriter,
    pub(super) reporter: Box<dyn Reporter>,
    pub(super) interrupts: watch::Receiver<u32>,
    _keepalive: Option<watch::Sender<u32>>,
    pub(super) ignore: GlobSet,
    pub(super) worker_cmd: CommandTemplate,
    pub(super) auditor_cmd: CommandTemplate,
    /// The auditor prompt prepared in AUDIT_PENDING for the run that follows.
    pub(super) audit_prompt: Option<String>,
    /// Blob hashes already written to the log by this process.
    pub(super) blobs_written: std::collections::HashSet<String>,
}

impl Engine {
    /// Creates a new session in `store` (state CREATED, journaled) ready to [`Engine::run`].
    /// Fails before anything is written if a command line does not parse or its program is
    /// missing.
    pub fn create(
        store: &Store,
        spec: SessionSpec,
        opts: EngineOptions,
    ) -> Result<Engine, EngineError> {
        let worker_cmd = CommandTemplate::parse(&spec.worker_cmd)?;
        let auditor_cmd = CommandTemplate::parse(&spec.auditor_cmd)?;
        worker_cmd.check(&spec.workdir)?;
        auditor_cmd.check(&spec.workdir)?;
        let workdir = spec
            .workdir
            .canonicalize()
            .unwrap_or_else(|_| spec.workdir.clone());
        let dir = store.create_session()?;
        let lock = dir.lock()?;
        let now = rfc3339_now();
        let policy = spec.policy;
        let file = SessionFile {
            schema: SCHEMA_VERSION,
            oneshot_id: dir.id().to_string(),
            state: SessionState::Created,
            iteration_count: 0,
            max_iterations: policy.limits().max_iterations,
            created_at: now.clone(),
            updated_at: now,
            created_ms: now_ms(),
            task: spec.task,
            workdir: workdir.clone(),
            worker_cmd: spec.worker_cmd,
            auditor_cmd: spec.auditor_cmd,
            policy: PolicyRef {
                path: policy.path().map(|p| p.to_path_buf()),
                hash: policy.hash().to_string(),
                generation: 1,
            },
            history: vec![crate::store::HistoryEntry {
                state: SessionState::Created,
                ts: now_ms(),
                reason: None,
                detail: None,
                pid: None,
                iteration: 0,
                policy_hash: policy.hash().to_string(),
                generation: 1,
            }],
            active_process: None,
            worker_prompt: String::new(),
            worker_output_tail: String::new(),
            auditor_output_tail: String::new(),
            last_verdict: None,
            evidence: None,
            rerun_iteration: false,
        };
        dir.write_state(&file)?;
        let mut engine = Engine::assemble(store, dir, lock, file, policy, opts)?;
        engine.note("session", "created")?;
        Ok(engine)
    }

    /// Opens an existing session to continue it (seed 000 §3). `policy` replaces the recorded
    /// one; `None` reloads the recorded policy file. Refuses terminal sessions: COMPLETED and
    /// FAILED have nothing left to do, REJECTED must not loop on its refusal (§3.3).
    pub fn resume(
        store: &Store,
        id: &str,
        policy: Option<PolicyHost>,
        opts: EngineOptions,
    ) -> Result<Engine, EngineError> {
        let dir = store.open(id)?;
        let lock = dir.lock()?;
        let mut file = dir.read_state()?;
        if let Some(why) = refusal(&file) {
            return Err(EngineError::Refused {
                id: file.oneshot_id.clone(),
                state: file.state,
                why,
            });
        }
        let policy = match policy {
            Some(p) => p,
            None => match &file.policy.path {
                Some(path) => {
                    let host = PolicyHost::load(path, opts.policy_options.clone())?;
                    if host.hash() != file.policy.hash {
                        vet_changed_policy(&file, path, &trust_store(&opts, store), opts.reload)?;
                    }
                    host
                }
                None => PolicyHost::builtin(),
            },
        };
        let changed = policy.hash() != file.policy.hash;
        // A different policy than last time is a new generation, as a hot reload would be.
        file.policy = PolicyRef {
            path: policy.path().map(|p| p.to_path_buf()),
            hash: policy.hash().to_string(),
            generation: file.policy.generation + u32::from(changed),
        };
        file.max_iterations = policy.limits().max_iterations;
        let mut engine = Engine::assemble(store, dir, lock, file, policy, opts)?;
        engine.note("session", "resumed")?;
        if changed {
            engine.warn("the policy changed since this session last ran; decisions from now on use the new one")?;
        }
        Ok(engine)
    }

    fn assemble(
        store: &Store,
        dir: SessionDir,
        lock: SessionLock,
        file: SessionFile,
        policy: PolicyHost,
        opts: EngineOptions,
    ) -> Result<Engine, EngineError> {
        let worker_cmd = CommandTemplate::parse(&file.worker_cmd)?;
        let auditor_cmd = CommandTemplate::parse(&file.auditor_cmd)?;
        let redactor = Redactor::from_env(policy.redact_patterns())
            .map_err(|e| EngineError::Redact(e.to_string()))?;
        let log = LogWriter::open(dir.log_path()).map_err(|source| EngineError::Log {
            id: dir.id().to_string(),
            source,
        })?;
        let ignore = super::evidence::ignore_globs(&file.workdir, store.root());
        let (slot, reload_warning) = reloading(policy, &file, store, &opts)?;
        let mut engine = Engine {
            dir,
            _lock: lock,
            file,
            slot,
            redactor: Arc::new(redactor),
            log,
            reporter: opts.reporter,
            interrupts: opts.interrupts,
            _keepalive: opts._keepalive,
            ignore,
            worker_cmd,
            auditor_cmd,
            audit_prompt: None,
            blobs_written: Default::default(),
        };
        if let Some(w) = reload_warning {
            engine.warn(&w)?;
        }
        Ok(engine)
    }

    /// The policy in force: the latest generation that loaded and validated.
    pub(super) fn policy(&self) -> &PolicyHost {
        self.slot.current()
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.file.oneshot_id
    }

    /// The state file as it stands.
    pub fn file(&self) -> &SessionFile {
        &self.file
    }

    /// Runs the session until it reaches a terminal state or is interrupted.
    pub async fn run(&mut self) -> Result<Outcome, EngineError> {
        use SessionState as S;
        // Before the first step of this run, an executing state can only be a run whose
        // oneshot died: nothing of ours is running yet.
        if self.file.state.is_executing() {
            self.take_over_crashed_run().await?;
        }
        loop {
            let state = self.file.state;
            let paused = *self.interrupts.borrow() > 0;
            if state.is_terminal() || (paused && !state.is_executing()) {
                return Ok(self.outcome(paused));
            }
            self.refresh_policy()?;
            match state {
                S::Created => {
                    self.file.iteration_count = 1;
                    self.file.worker_prompt = self.file.task.clone();
                    self.transition(Event::Run, None, None)?;
                }
                S::WorkerExecuting => self.run_worker().await?,
                S::AuditPending => self.prepare_audit()?,
                S::AuditorExecuting => self.run_auditor().await?,
                S::ReiterationPending => self.reiterate()?,
                S::RecoveryPending => self.salvage()?,
                S::Interrupted => self.resume_interrupted()?,
                S::Completed | S::Failed | S::Rejected => unreachable!("checked above"),
            }
        }
    }

    fn outcome(&self, interrupted: bool) -> Outcome {
        let last = self.file.history.last();
        Outcome {
            session_id: self.file.oneshot_id.clone(),
            state: self.file.state,
            reason: last.and_then(|h| h.reason.clone()),
            detail: last.and_then(|h| h.detail.clone()),
            interrupted,
        }
    }

    /// The status-line snapshot.
    pub(super) fn status(&self, idle: Duration) -> Status {
        Status {
            session_id: self.file.oneshot_id.clone(),
            state: self.file.state,
            iteration: self.file.iteration_count,
            max_iterations: self.file.max_iterations,
            elapsed: Duration::from_millis(now_ms().saturating_sub(self.file.created_ms)),
            idle,
            policy: self.slot.outstanding().first().map(|e| e.to_string()),
        }
    }

    /// Appends a `{"type": kind, "message": …}` record and syncs the log.
    pub(super) fn note(&mut self, kind: &'static str, message: &str) -> Result<(), EngineError> {
        let message = self.redactor.redact(message);
        let record = Note {
            ts: now_ms(),
            kind,
            message: &message,
            pid: (kind == "session").then(std::process::id),
            policy_hash: (kind == "session").then_some(self.slot.current().hash()),
        };
        self.log
            .append(&record)
            .map_err(|source| self.log_error(source))?;
        self.log.sync().map_err(|source| self.log_error(source))
    }

    /// Records and shows a warning.
    pub(super) fn warn(&mut self, message: &str) -> Result<(), EngineError> {
        self.reporter.warn(message);
        self.note("warning", message)
    }

    pub(super) fn log_error(&self, source: std::io::Error) -> EngineError {
        EngineError::Log {
            id: self.file.oneshot_id.clone(),
            source,
        }
    }

    /// Hook context for the current state.
    pub(super) fn ctx(&self) -> crate::policy::HookCtx {
        hook_ctx(&self.file)
    }

    /// Writes the state file (redaction of its free-text fields happens where they are set).
    pub(super) fn save(&self) -> Result<(), EngineError> {
        Ok(self.dir.write_state(&self.file)?)
    }

    /// The session directory.
    pub(super) fn dir(&self) -> &SessionDir {
        &self.dir
    }
}

/// Why a session in this state cannot be resumed, if it cannot.
fn refusal(file: &SessionFile) -> Option<String> {
    let reason = file
        .history
        .last()
        .and_then(|h| h.reason.clone())
        .unwrap_or_default();
    match file.state {
        SessionState::Completed => Some("it already finished; nothing to resume".into()),
        SessionState::Failed => Some(format!(
            "it failed ({reason}); start a new session, e.g. with a different policy or task"
        )),
        SessionState::Rejected => Some(format!(
            "the auditor judged the task impossible ({reason}); resuming would only repeat the \
             refusal — start a new session with a changed task"
        )),
        _ => None,
    }
}
