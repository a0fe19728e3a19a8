//! Opening a session for driving: a new one, or an existing one to resume.

use super::interrupt::{Ask, Interrupt};
use super::process::Proc;
use super::slot::{reloading, trust_store, vet_changed_policy};
use super::{EngineError, Options, SessionBuilder};
use crate::executor::CommandTemplate;
use crate::machine::SessionState;
use crate::pipeline::{Redactor, now_ms};
use crate::policy::{PolicyHost, ReloadingPolicy};
use crate::process::Role;
use crate::session::{NewSession, PolicyRef, Session};
use crate::store::record::blob::Blobber;
use crate::store::{LogWriter, SessionDir, SessionLock, Store};
use globset::GlobSet;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Drives one session. Holds the session's lock for as long as it lives.
pub struct Engine {
    pub(super) dir: SessionDir,
    _lock: SessionLock,
    pub(super) session: Session,
    /// The policy, hot-reloaded between steps.
    pub(super) slot: ReloadingPolicy,
    pub(super) redactor: Arc<Redactor>,
    pub(super) log: LogWriter,
    pub(super) blobber: Blobber,
    pub(super) interrupts: mpsc::UnboundedReceiver<Ask>,
    pub(super) interrupt: Interrupt,
    pub(super) ignore: GlobSet,
    pub(super) worker_cmd: CommandTemplate,
    pub(super) auditor_cmd: CommandTemplate,
    /// The process running now, if any.
    pub(super) process: Option<Proc>,
    /// The session changed since `oneshot.json` was last written.
    pub(super) dirty: bool,
    /// `oneshot.json` was written but not yet fsynced.
    pub(super) unsynced: bool,
    /// Warnings found while opening, told to the observer when the run starts.
    pub(super) warnings: Vec<String>,
    /// Notes found while opening (how to edit the policy while it runs), told likewise.
    pub(super) notes: Vec<String>,
    /// Where its agents may go (Landlock), when they are confined.
    pub(super) confine: Option<crate::executor::confine::Confinement>,
    /// The verdict schema's file for an agent auditor, written the first time one starts.
    pub(super) schema_file: Option<crate::agent::SchemaFile>,
    /// The session's inbox (`oneshot say`), watched.
    pub(super) inbox: super::inbox::InboxWatch,
    /// The agents' egress proxy: their gateways, its questions and reports.
    pub(super) egress: super::egress::Egress,
    /// The variables last left out of the agents' environment, as told.
    pub(super) env_dropped: Option<Vec<String>>,
}

impl Engine {
    /// Creates a new session in `store` (state CREATED, written to disk) from `spec`. Fails
    /// before anything is written if a command line does not parse or its program is missing.
    pub(super) fn create(store: &Store, spec: SessionBuilder) -> Result<Engine, EngineError> {
        let usage = |what: &str| EngineError::Usage(format!("create a session: it needs {what}"));
        // An agent's command line is what it would run first: shown in listings, checked
        // for its binary now.
        let agent_line = |role: Role| {
            spec.agents.spec(role).map(|a| {
                let verdict = crate::agent::AnswerSchema {
                    text: crate::agent::VERDICT_SCHEMA,
                    file: std::path::Path::new(crate::agent::VERDICT_SCHEMA_FILE),
                };
                shell_words::join(a.launch(role, None, Some(verdict)).argv)
            })
        };
        let worker = agent_line(Role::Worker)
            .or(spec.worker)
            .ok_or_else(|| usage("a worker (--worker AGENT or --worker-cmd)"))?;
        let auditor = agent_line(Role::Auditor)
            .or(spec.auditor)
            .ok_or_else(|| usage("an auditor (--auditor AGENT or --auditor-cmd)"))?;
        let workdir = match spec.workdir {
            Some(d) => d,
            None => std::env::current_dir()
                .map_err(|e| EngineError::Usage(format!("read the current directory: {e}")))?,
        };
        let worker_cmd = CommandTemplate::parse(&worker)?;
        let auditor_cmd = CommandTemplate::parse(&auditor)?;
        worker_cmd.check_for(Role::Worker, &workdir)?;
        auditor_cmd.check_for(Role::Auditor, &workdir)?;
        let workdir = workdir.canonicalize().unwrap_or(workdir);
        let policy = spec.policy.unwrap_or_else(PolicyHost::builtin);
        // The state file keeps the command lines without their secrets; this run uses the
        // real ones, parsed above. (A resume then cannot run a line that held one.)
        let redactor = Redactor::from_env(policy.redact_patterns()).map_err(EngineError::Redact)?;
        let mut warnings = Vec::new();
        let mut stored = |role: Role, line: String| match redactor.redact(&line) {
            std::borrow::Cow::Borrowed(_) => line,
            std::borrow::Cow::Owned(redacted) => {
                warnings.push(format!(
                    "the {role} command line holds a secret; it is stored without it, so `oneshot \
                     resume` cannot run it again: pass secrets through the environment instead"
                ));
                redacted
            }
        };
        let worker = stored(Role::Worker, worker);
        let auditor = stored(Role::Auditor, auditor);
        // The task is a prompt: what is stored is what the agents get, and neither holds a
        // secret.
        let task = match redactor.redact(&spec.task) {
            std::borrow::Cow::Borrowed(_) => spec.task,
            std::borrow::Cow::Owned(redacted) => {
                warnings.push(
                    "the task holds a secret; it is stored and given to the agents without it: \
                     pass secrets through the environment instead"
                        .to_string(),
                );
                redacted
            }
        };
        // Every prompt holds the task: one too large for a command's argv would fail late.
        worker_cmd.check_task(Role::Worker, &task)?;
        auditor_cmd.check_task(Role::Auditor, &task)?;
        let dir = store.create_session()?;
        let lock = dir.lock()?;
        let mut session = Session::new(
            NewSession {
                id: dir.id().to_string(),
                task,
                workdir,
                worker_cmd: worker,
                auditor_cmd: auditor,
            },
            PolicyRef {
                path: policy.path().map(|p| p.to_path_buf()),
                hash: policy.hash().to_string(),
                generation: 1,
                budget: crate::policy::Budget::set(policy.limits().budget),
            },
            policy.limits().max_iterations,
            now_ms(),
        );
        session.agents = spec.agents;
        // Written so the session exists from here on; made durable by the first step.
        let sealed = redactor.seal(&session).map_err(|e| EngineError::Internal {
            id: session.id.clone(),
            message: crate::error::failure(&e),
        })?;
        dir.replace_state(&sealed)?;
        let commands = Some((worker_cmd, auditor_cmd));
        let mut engine =
            Engine::assemble(store, dir, lock, session, policy, spec.options, commands)?;
        engine.warnings.extend(warnings);
        engine.unsynced = true;
        Ok(engine)
    }

    /// Opens an existing session to continue it (seed 000 §3). `policy` replaces the recorded
    /// one; `None` reloads the recorded policy file (refused when it changed inside the
    /// workdir and nobody trusted the change). Refuses terminal sessions: COMPLETED and FAILED
    /// have nothing left to do, REJECTED must not loop on its refusal (§3.3).
    pub fn resume(
        store: &Store,
        id: &str,
        policy: Option<PolicyHost>,
        options: Options,
    ) -> Result<Engine, EngineError> {
        let dir = store.open(id)?;
        let lock = dir.lock()?;
        // Only a state file oneshot sealed is driven again: an agent that rewrote it (another
        // policy, workdir or process to kill) is caught here.
        let session = dir.read_sealed_state()?;
        if let Some(why) = refusal(&session) {
            return Err(EngineError::Refused {
                id: session.id.clone(),
                state: session.state(),
                why,
            });
        }
        let policy = match policy {
            Some(p) => p,
            None => match &session.policy.path {
                Some(path) => {
                    let host = PolicyHost::load(path, options.policy_options.clone())?;
                    if host.hash() != session.policy.hash {
                        let trust = trust_store(&options, store);
                        vet_changed_policy(&session, host.sources(), &trust, options.reload)?;
                    }
                    host
                }
                None => PolicyHost::builtin(),
            },
        };
        if session.state() == SessionState::Failed
            && session.phase.retake().is_some()
            && policy.hash() == session.policy.hash
        {
            return Err(EngineError::Refused {
                id: session.id.clone(),
                state: session.state(),
                why: unchanged_policy(&session),
            });
        }
        Engine::assemble(store, dir, lock, session, policy, options, None)
    }

    fn assemble(
        store: &Store,
        dir: SessionDir,
        lock: SessionLock,
        mut session: Session,
        policy: PolicyHost,
        options: Options,
        commands: Option<(CommandTemplate, CommandTemplate)>,
    ) -> Result<Engine, EngineError> {
        // What the session runs with from now on, kept for the next resume.
        let settings = options.settings();
        let mut dirty = session.settings != settings;
        session.settings = settings;
        let (sandbox, confine, sandbox_warning) = confine(&session, store, &options);
        let egress = super::egress::Egress::new(&sandbox, session.settings.network);
        dirty |= session.sandbox.as_ref() != Some(&sandbox);
        session.sandbox = Some(sandbox);
        let (worker_cmd, auditor_cmd) = match commands {
            Some(real) => real,
            None => (
                stored_command(&session, Role::Worker)?,
                stored_command(&session, Role::Auditor)?,
            ),
        };
        let redactor = Redactor::from_env(policy.redact_patterns()).map_err(EngineError::Redact)?;
        let log = LogWriter::open(dir.log_path()).map_err(|source| EngineError::Log {
            id: dir.id().to_string(),
            source,
        })?;
        let ignore = super::evidence::ignore_globs(&session.workdir, store.root());
        // A different policy than last time is a new generation, as a hot reload would be.
        let generation =
            session.policy.generation + u32::from(policy.hash() != session.policy.hash);
        let (slot, reload_warning) = reloading(policy, generation, &session, store, &options)?;
        let notes = super::slot::trust_note(&slot, &session)
            .into_iter()
            .collect();
        let (interrupt, interrupts) = Interrupt::channel();
        let (inbox, inbox_warning) = super::inbox::InboxWatch::start(&dir);
        let engine = Engine {
            dir,
            _lock: lock,
            session,
            slot,
            redactor: Arc::new(redactor),
            log,
            blobber: Blobber::default(),
            interrupts,
            interrupt,
            ignore,
            worker_cmd,
            auditor_cmd,
            process: None,
            dirty,
            unsynced: false,
            inbox,
            warnings: reload_warning
                .into_iter()
                .chain(sandbox_warning)
                .chain(inbox_warning)
                .collect(),
            notes,
            confine,
            schema_file: None,
            egress,
            env_dropped: None,
        };
        Ok(engine)
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.session.id
    }

    /// The session as it stands.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The session's lock file: whether its holder lives tells whether anyone drives the
    /// session ([`crate::store::holder_alive`]) — what a guard checks before it sweeps.
    pub fn lock_path(&self) -> std::path::PathBuf {
        self.dir.lock_path()
    }

    /// Told each time the session's activity log was flushed to its file (its output reaches
    /// the file within about 70 ms: gathered, then flushed): a reader in this process waits on it instead of polling the
    /// file. Take it before calling [`Engine::run`].
    pub fn log_flushes(&self) -> std::sync::Arc<tokio::sync::Notify> {
        self.log.flushes()
    }

    /// A handle to interrupt the session while it runs (from another thread, a signal
    /// handler, a UI). Take it before calling [`Engine::run`].
    pub fn interrupter(&self) -> Interrupt {
        self.interrupt.clone()
    }
}

/// How the session's agents are confined this run, what confines them, and the warnings to
/// give: the kernel offers no Landlock, or the state dir lies inside the workdir.
fn confine(
    session: &Session,
    store: &Store,
    options: &Options,
) -> (
    crate::process::Sandbox,
    Option<crate::executor::confine::Confinement>,
    Vec<String>,
) {
    let (sandbox, warning) = crate::confinement::decide(
        session.settings.sandbox,
        crate::executor::confine::available(),
        crate::sandbox::available(),
        session.settings.network,
    );
    let mut warnings: Vec<String> = warning.into_iter().collect();
    let namespaces = matches!(sandbox, crate::process::Sandbox::Namespaces { .. });
    if !namespaces && !matches!(sandbox, crate::process::Sandbox::Landlock { .. }) {
        return (sandbox, None, warnings);
    }
    let trust = trust_store(options, store);
    let kinds: Vec<_> = [&session.agents.worker, &session.agents.auditor]
        .into_iter()
        .flatten()
        .map(|a| a.kind)
        .collect();
    let mut hidden = vec![trust.path().to_path_buf()];
    if !namespaces && crate::confinement::left_reachable(store.root(), &session.workdir) {
        warnings.push(format!(
            "the state dir {} lies inside the workdir {}: the agents can read and write it \
             (the sandbox hides only the key, the trust store and what lies outside the \
             workdir); keep it outside, as the default does",
            store.root().display(),
            session.workdir.display()
        ));
    } else {
        hidden.push(store.root().to_path_buf());
    }
    let c = crate::confinement::for_agents(&session.workdir, &hidden, &kinds, namespaces);
    (sandbox, Some(c), warnings)
}

/// Why a session in this state cannot be resumed, if it cannot: what follows "it is STATE; ".
fn refusal(s: &Session) -> Option<String> {
    let reason = s
        .last_reason()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let last = s
        .last_reason()
        .map(|r| format!("{r}; "))
        .unwrap_or_default();
    match s.state() {
        SessionState::Completed => Some("there is nothing left to do".into()),
        // Failed only because its policy failed: a corrected policy takes it up again.
        SessionState::Failed if s.phase.retake().is_some() => None,
        SessionState::Failed => Some(format!(
            "{last}start a new session, e.g. with a different policy or task"
        )),
        SessionState::Rejected => Some(format!(
            "the auditor judged the task impossible{reason}; resuming would only repeat the \
             refusal — start a new session with a changed task"
        )),
        _ => None,
    }
}

/// Why a session that failed by a policy error is not taken up again under the same policy:
/// the same question would fail the same way.
fn unchanged_policy(s: &Session) -> String {
    let last = s
        .last_reason()
        .map(|r| format!("{r}; "))
        .unwrap_or_default();
    let policy = match &s.policy.path {
        Some(path) => format!("fix {}", path.display()),
        None => "the built-in policy cannot change".to_string(),
    };
    format!(
        "{last}its policy is unchanged since ({}). It failed only because its policy failed, so \
         the work is kept: {policy} and resume again, or resume with --policy FILE — the failed \
         question is then asked again of the corrected policy",
        s.policy.hash
    )
}

/// A command line read back from the state file, for a resume: one stored without its secret
/// cannot run again, and says so.
fn stored_command(session: &Session, role: Role) -> Result<CommandTemplate, EngineError> {
    let line = match role {
        Role::Worker => &session.worker_cmd,
        Role::Auditor => &session.auditor_cmd,
    };
    if line.contains(crate::pipeline::REDACTED) {
        return Err(EngineError::Usage(format!(
            "resume session {}: its {role} command line held a secret, which was not stored \
             ({line}); start a new session that takes the secret from the environment",
            session.id
        )));
    }
    Ok(CommandTemplate::parse(line)?)
}
