//! What a step's loop asks of the world: make the workspace, make and run the session, look
//! at what a failed execution left, harvest, ask the panel. [`RealHands`] does it with git,
//! the engine and the agents; a test's hands answer from a script on paused time. Each call
//! turns one [`crate::job::step::JobEffect`] into the [`RunnerEvent`] the core is told next.

use super::RunnerOptions;
use super::drive;
use super::relay::{self, Changes, Relay};
use super::session;
use super::ship::{self, Shipper};
use crate::engine::{Engine, Interrupt};
use crate::job::record::{Author, Job, Workspace};
use crate::job::step::{Found, HarvestFacts, RunnerEvent};
use crate::job::store::{JobStore, Lease};
use crate::job::workspace;
use crate::redact::Redacted;
use crate::redact::Redactor;
use std::sync::Arc;

/// The effects of a step that touch the world, each answered with what happened.
#[allow(async_fn_in_trait)] // Used on one thread, by the runner's own loop: never `Send`.
pub(crate) trait Hands {
    /// Makes (or finds again) the job's workspace: `Provisioned` or `ProvisionFailed`.
    async fn provision(&mut self, job: &Job) -> RunnerEvent;

    /// Makes the session — a new one with `prompt`, or opens `resume` — and keeps it to run:
    /// `SessionMade`, or `SessionEnded` when it cannot be made.
    async fn make_session(
        &mut self,
        job: &Job,
        ws: &Workspace,
        prompt: String,
        resume: Option<String>,
    ) -> RunnerEvent;

    /// What pauses or kills the session made, while it runs.
    fn interrupter(&self) -> Option<Interrupt>;

    /// Runs the session made to its end: `SessionEnded`.
    async fn run_session(&mut self, job: &str) -> RunnerEvent;

    /// Looks at what a failed execution of `job` left of `session`: `Inspected`.
    async fn inspect(&mut self, job: &Job, session: Option<String>) -> RunnerEvent;

    /// Reads how session `id` rests: `SessionEnded`.
    async fn read_session(&mut self, id: String) -> RunnerEvent;

    /// Commits and measures the workspace's changes, as `author` when known, and pushes the
    /// job's branch when its source is a remote: `Harvested` or `HarvestFailed`.
    async fn harvest(
        &mut self,
        ws: Workspace,
        message: Redacted<String>,
        author: Option<Author>,
    ) -> RunnerEvent;

    /// Asks the auditors of `panel` about the harvested work: `Audited`.
    async fn audit(&mut self, job: &Job, ws: &Workspace, panel: &[String]) -> RunnerEvent;
}

/// The runner's hands: git on the blocking pool, sessions run by an [`Engine`] on the
/// runner's thread, the panel through `ask`.
pub(super) struct RealHands<'a> {
    opts: &'a RunnerOptions,
    /// The step's policy, shared with its judge: the panel's hooks ask the same copy.
    policy: &'a session::JobPolicy,
    engine: Option<Engine>,
    /// Where the sessions' records are shipped, under the step's lease, through the job's
    /// redactor.
    store: Arc<dyn JobStore>,
    lease: Lease,
    redactor: Arc<Redactor>,
    /// Wakes the relay of the job's messages into the running session.
    changes: std::rc::Rc<Changes>,
}

impl<'a> RealHands<'a> {
    pub(super) fn new(
        opts: &'a RunnerOptions,
        policy: &'a session::JobPolicy,
        store: Arc<dyn JobStore>,
        lease: Lease,
        redactor: Arc<Redactor>,
        changes: std::rc::Rc<Changes>,
    ) -> RealHands<'a> {
        RealHands {
            opts,
            policy,
            engine: None,
            store,
            lease,
            redactor,
            changes,
        }
    }

    /// A shipper of session `id`'s records into the job store.
    fn shipper(&self, id: &str) -> Shipper {
        Shipper::new(
            Arc::clone(&self.store),
            self.lease.clone(),
            Arc::clone(&self.redactor),
            &self.opts.runner,
            &self.opts.state_dir,
            id,
        )
    }
}

impl Hands for RealHands<'_> {
    async fn provision(&mut self, job: &Job) -> RunnerEvent {
        let job = job.clone();
        let state_dir = self.opts.state_dir.clone();
        // A job whose source is a remote is provisioned from this machine's mirror of it,
        // from the base its first provisioning recorded (`workspace::provision_job`).
        let made =
            tokio::task::spawn_blocking(move || workspace::provision_job(&job, &state_dir)).await;
        match made {
            Ok(Ok(ws)) => RunnerEvent::Provisioned(ws),
            Ok(Err(e)) => RunnerEvent::ProvisionFailed {
                transient: e.is_contention(),
                reason: e.to_string(),
            },
            Err(e) => RunnerEvent::ProvisionFailed {
                reason: format!("provisioning panicked: {e}"),
                transient: false,
            },
        }
    }

    async fn make_session(
        &mut self,
        job: &Job,
        ws: &Workspace,
        prompt: String,
        resume: Option<String>,
    ) -> RunnerEvent {
        session::make(&job.spec, ws, prompt, resume, self.opts, &mut self.engine)
    }

    fn interrupter(&self) -> Option<Interrupt> {
        self.engine.as_ref().map(Engine::interrupter)
    }

    async fn run_session(&mut self, job: &str) -> RunnerEvent {
        let beside = self.engine.as_ref().map(|e| {
            let relay = Relay::new(
                Arc::clone(&self.store),
                &self.lease.job,
                &self.opts.state_dir,
                e.id(),
                Arc::clone(&self.redactor),
            );
            (self.shipper(e.id()), e.log_flushes(), relay)
        });
        match (self.engine.as_mut(), beside) {
            (Some(engine), Some((shipper, flushes, relay))) => {
                // The job's messages go into the session's inbox before it runs (its first
                // worker prompt carries those no earlier session took in), then as said.
                let run = session::run(job, engine, self.opts);
                let shipped = ship::alongside(run, shipper, &flushes);
                let ended = relay::alongside(shipped, relay, &self.changes).await;
                self.engine = None;
                ended
            }
            _ => session::never_made(),
        }
    }

    async fn inspect(&mut self, job: &Job, session: Option<String>) -> RunnerEvent {
        let dir = self.opts.state_dir.clone();
        let found = {
            let session = session.clone();
            off_thread(move || session::inspect(session.as_deref(), &dir)).await
        };
        match (&session, found) {
            // A session found here may have ended before its runner shipped all of it.
            (Some(id), found @ RunnerEvent::Inspected(Found::Session(_))) => {
                ship::once(self.shipper(id)).await;
                found
            }
            // Not on this machine: another machine's runner may have run it.
            (Some(id), RunnerEvent::Inspected(Found::Nothing)) => {
                let (jid, id) = (self.lease.job.clone(), id.clone());
                let found = drive::off_loop(&self.store, move |s| elsewhere(s, &jid, &id)).await;
                RunnerEvent::Inspected(match found {
                    Found::Elsewhere {
                        session,
                        runner,
                        account,
                        ..
                    } => {
                        let (job, dir) = (job.clone(), self.opts.state_dir.clone());
                        match tokio::task::spawn_blocking(move || relocate(&job, &dir)).await {
                            Ok(Ok(workspace)) => Found::Elsewhere {
                                session,
                                runner,
                                account,
                                workspace,
                            },
                            Ok(Err(e)) => Found::Unreadable {
                                reason: format!(
                                    "session {session} ran on another machine (runner \
                                     {runner}), and the job's workspace could not be made \
                                     here from its pushed branch: {e}"
                                ),
                            },
                            Err(e) => std::panic::resume_unwind(e.into_panic()),
                        }
                    }
                    other => other,
                })
            }
            (_, found) => found,
        }
    }

    async fn read_session(&mut self, id: String) -> RunnerEvent {
        let dir = self.opts.state_dir.clone();
        ship::once(self.shipper(&id)).await;
        off_thread(move || session::read_end(&id, &dir)).await
    }

    async fn harvest(
        &mut self,
        ws: Workspace,
        message: Redacted<String>,
        author: Option<Author>,
    ) -> RunnerEvent {
        let done =
            tokio::task::spawn_blocking(move || workspace::harvest(&ws, &message, author.as_ref()))
                .await;
        match done {
            Ok(Ok(h)) => RunnerEvent::Harvested(HarvestFacts {
                commit: h.commit,
                diff_hash: h.diff_hash,
                diff_stat: h.diff_stat,
                files: h.files,
                empty: h.empty,
            }),
            Ok(Err(e)) => RunnerEvent::HarvestFailed {
                out_of_space: out_of_space(&e),
                reason: e.to_string(),
            },
            Err(e) => RunnerEvent::HarvestFailed {
                reason: format!("harvest panicked: {e}"),
                out_of_space: false,
            },
        }
    }

    async fn audit(&mut self, job: &Job, ws: &Workspace, panel: &[String]) -> RunnerEvent {
        let policy = self.policy.service();
        RunnerEvent::Audited(
            super::panel::audit(job, ws, panel, &self.opts.state_dir, policy).await,
        )
    }
}

/// This machine's workspace for `job` when the one it records is another machine's — made
/// from the job's branch as that machine pushed it — or `None` when the recorded one serves: it
/// is under this machine's state directory, or the job's source is no remote (a path every
/// runner reaches, where the recorded workspace is too).
fn relocate(
    job: &Job,
    state_dir: &std::path::Path,
) -> Result<Option<Workspace>, workspace::WorkspaceError> {
    let Some(ws) = &job.workspace else {
        return Ok(None);
    };
    if job.spec.remote.is_none() {
        return Ok(None);
    }
    let here = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
    if ws.path.starts_with(&here) || ws.path.starts_with(state_dir) {
        return Ok(None);
    }
    workspace::provision_job(job, state_dir).map(Some)
}

/// What the store holds of session `id` of job `job`, which this machine does not have: its
/// journal, when another machine's runner shipped it (else nothing: it never started).
fn elsewhere(store: &dyn JobStore, job: &str, id: &str) -> Found {
    match store.journals(job) {
        Ok(journals) => match journals.into_iter().find(|j| j.session == id) {
            Some(j) => {
                let account = j
                    .session()
                    .map(|s| session::final_message(&s.worker_output))
                    .unwrap_or_default();
                Found::Elsewhere {
                    session: j.session,
                    runner: j.runner,
                    account,
                    workspace: None,
                }
            }
            None => Found::Nothing,
        },
        Err(e) => Found::Unreadable {
            reason: format!(
                "session {id} is not on this machine, and the store could not say where it ran: {e}"
            ),
        },
    }
}

/// Runs a file read on the blocking pool, off the loop's thread that every running session
/// shares; one that panicked reads as a session that cannot be read.
async fn off_thread(f: impl FnOnce() -> RunnerEvent + Send + 'static) -> RunnerEvent {
    match tokio::task::spawn_blocking(f).await {
        Ok(event) => event,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Whether `e` is the disk (or the user's quota) being full: an OS error, or git saying so
/// (it runs with `LC_ALL=C`, so in these words).
fn out_of_space(e: &workspace::WorkspaceError) -> bool {
    use nix::errno::Errno;
    if let workspace::WorkspaceError::Io { source, .. } = e {
        let code = source.raw_os_error();
        return code == Some(Errno::ENOSPC as i32) || code == Some(Errno::EDQUOT as i32);
    }
    let said = e.to_string();
    said.contains("No space left on device") || said.contains("Disk quota exceeded")
}
