//! Driving one claimed step: the core decides, this carries out, until the job rests.

use super::session::{self, JobPolicy};
use super::{Note, RunnerOptions};
use crate::job::record::Workspace;
use crate::job::step::{HarvestFacts, JobEffect, RunnerEvent, Step};
use crate::job::store::{Claim, JobStore, JobStoreError, Lease};
use crate::job::{JobState, workspace};
use crate::pipeline::now_ms;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

/// How a step ended.
#[derive(Debug, Clone, PartialEq)]
pub struct StepEnd {
    /// The job.
    pub job: String,
    /// The state it rests in; when the runner lost it, the state the store has now (CANCELED
    /// after a human's cancel), never one this runner reached but could not save.
    pub state: JobState,
    /// Why, in words.
    pub reason: Option<String>,
    /// The runner lost its lease (a human canceled the job, or another runner took it over)
    /// or could not write: the step's outcome is not this runner's to record. Says who moved
    /// the job from which state when the store knows (`canceled by ana while it was
    /// EXECUTING; …`).
    pub lost: Option<String>,
    /// The runner could not carry the step on — the disk is full, the store failed — and
    /// stopped it where it was, in a transient `state`, writing nothing more. Why, in words.
    /// The job stays under this runner's lease, which no heartbeat renews now, and once it
    /// expires the next runner's claim (never this runner's) recovers the job from there. A
    /// failure of the run, unlike `lost`.
    pub failed: Option<String>,
    /// When the lease left on a `failed` step's job expires (ms since the epoch), if the store
    /// could say.
    pub lease_until_ms: Option<u64>,
    /// The runner was stopped ([`super::Shutdown`], a Ctrl-C) before the job rested: its
    /// session, if one ran, paused (INTERRUPTED), and its lease was handed back, so any
    /// runner's next claim continues the job from `state`. What was left where, in words.
    pub paused: Option<String>,
}

/// Why a step stopped before its job rested.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Stop {
    /// The job is no longer this runner's: a human canceled it, another runner took it over.
    Lost(String),
    /// This runner could not go on (see [`StepEnd::failed`]).
    Failed(String),
    /// The runner was asked to stop (see [`StepEnd::paused`]).
    Halted,
}

impl Stop {
    /// What a store error that refused one of this runner's writes means for the step.
    pub(super) fn from_store(e: &JobStoreError) -> Stop {
        match e {
            JobStoreError::Fenced { .. } | JobStoreError::NotFound { .. } => {
                Stop::Lost(e.to_string())
            }
            // The disk is full, the store is locked or broken: the lease is still this
            // runner's, and the job is as it last saved it. Said with its cause (SQLite's or
            // the OS's words).
            _ => Stop::Failed(crate::error::chain(e)),
        }
    }
}

/// What the heartbeat shares with the step: whether the step must stop (its lease was lost),
/// and the session to kill when it must.
#[derive(Default)]
pub(super) struct Hold {
    pub(super) stop: Option<Stop>,
    pub(super) interrupt: Option<crate::engine::Interrupt>,
}

/// Drives `claim` until the job rests or the lease is lost.
pub(super) async fn drive(store: Arc<dyn JobStore>, claim: Claim, opts: &RunnerOptions) -> StepEnd {
    let lease = claim.lease.clone();
    let hold = Rc::new(RefCell::new(Hold::default()));
    let beat = tokio::task::spawn_local(heartbeat(
        Arc::clone(&store),
        lease.clone(),
        opts.lease_ttl,
        Rc::clone(&hold),
    ));
    let mut step = Step::new(claim.job, opts.runner.clone());
    let policy = JobPolicy::new(&step.job.spec);
    // Everything this step writes — the job, its transitions, artifacts, the commit — goes
    // through the job's redactor.
    let redactor = crate::job::redactor(step.job.spec.policy.as_deref());
    let mut judge = policy.judge();
    let mut queue = VecDeque::from(step.step(
        now_ms(),
        RunnerEvent::Claimed {
            reclaimed: claim.reclaimed,
        },
        &mut judge,
    ));
    let halter = tokio::task::spawn_local(halter(opts.shutdown.clone(), Rc::clone(&hold)));
    let mut stop = None;
    // The last state the store accepted from this runner: what the job was when it was lost,
    // should the store not say more.
    let mut saved = step.job.state;
    while let Some(effect) = queue.pop_front() {
        if let Some(why) = hold.borrow().stop.clone() {
            stop = Some(why);
            break;
        }
        // Stopped: what was decided is still written; nothing new starts.
        let writes = matches!(effect, JobEffect::Save(_) | JobEffect::AddArtifact(_));
        if !writes && opts.shutdown.halt() != super::Halt::Run {
            stop = Some(Stop::Halted);
            break;
        }
        let event = match effect {
            JobEffect::Save(t) => {
                if let Err(e) = save(&store, &lease, &redactor, &step.job, t.as_ref()).await {
                    stop = Some(e);
                    break;
                }
                saved = step.job.state;
                if let Some(t) = t {
                    (opts.on_note)(&Note::Moved {
                        job: step.job.id.clone(),
                        transition: t,
                    });
                }
                None
            }
            JobEffect::AddArtifact(a) => {
                let added = match redactor.seal(&a) {
                    Ok(a) => {
                        let l = lease.clone();
                        off_loop(&store, move |s| s.add_artifact(&l, &a))
                            .await
                            .map_err(|e| Stop::from_store(&e))
                    }
                    Err(e) => Err(Stop::Failed(e.to_string())),
                };
                if let Err(e) = added {
                    stop = Some(e);
                    break;
                }
                None
            }
            JobEffect::Done => break,
            JobEffect::Abandon { reason } => {
                stop = Some(Stop::Failed(reason));
                break;
            }
            JobEffect::Provision { after } => {
                if !rest(after, &opts.shutdown).await {
                    stop = Some(Stop::Halted);
                    break;
                }
                Some(provision(&step, opts).await)
            }
            JobEffect::Execute { prompt, resume } => {
                let ws = workspace_of(&step);
                let to = session::Writes {
                    store: &store,
                    lease: &lease,
                    redactor: &redactor,
                };
                let ended = session::execute(&mut step, &ws, prompt, resume, opts, to, &hold).await;
                if opts.shutdown.halt() != super::Halt::Run {
                    // Paused by the stop, not ended: its end is not the job's to judge. The
                    // next claim resumes it.
                    stop = Some(Stop::Halted);
                    break;
                }
                Some(ended)
            }
            JobEffect::Recover { session, after } => {
                if !rest(after, &opts.shutdown).await {
                    stop = Some(Stop::Halted);
                    break;
                }
                Some(session::recover(session.as_deref(), opts))
            }
            JobEffect::ReadSession(id) => Some(session::read_end(&id, opts)),
            JobEffect::Harvest { message } => {
                let ws = workspace_of(&step);
                Some(harvest(ws, redactor.text(&message)).await)
            }
            JobEffect::Audit(panel) => {
                let ws = workspace_of(&step);
                Some(RunnerEvent::Audited(
                    super::panel::audit(&step.job, &ws, &panel, &opts.state_dir).await,
                ))
            }
        };
        if let Some(event) = event {
            let (name, state) = (event.name(), step.job.state);
            let next = step.step(now_ms(), event, &mut judge);
            if next.is_empty() {
                // The core did not expect it: a bug, said rather than ended on quietly. The
                // job stays where it was saved, for the next runner once the lease lapses.
                stop = Some(Stop::Failed(format!(
                    "internal error: the job core did not expect \"{name}\" in {state}; the \
                     step stopped there"
                )));
                break;
            }
            queue.extend(next);
        }
    }
    beat.abort();
    halter.abort();
    let stop = stop.or_else(|| hold.borrow().stop.clone());
    match stop {
        Some(Stop::Lost(why)) => lost_end(store.as_ref(), &step.job.id, saved, why),
        Some(Stop::Failed(why)) => failed_end(store.as_ref(), &lease, saved, why),
        Some(Stop::Halted) => halted_end(store.as_ref(), &lease, &step, saved),
        None => StepEnd {
            job: step.job.id.clone(),
            state: step.job.state,
            reason: step.job.reason.clone(),
            lost: None,
            failed: None,
            lease_until_ms: None,
            paused: None,
        },
    }
}

/// Waits `after` (a backoff) unless the runner is stopped first; whether it waited it out.
async fn rest(after: std::time::Duration, shutdown: &super::Shutdown) -> bool {
    if after.is_zero() {
        return shutdown.halt() == super::Halt::Run;
    }
    let mut halted = shutdown.watch();
    tokio::select! {
        _ = tokio::time::sleep(after) => shutdown.halt() == super::Halt::Run,
        _ = halted.wait_for(|h| *h != super::Halt::Run) => false,
    }
}

/// Passes a stop on to the step's running session: pause it, or kill its agent.
async fn halter(shutdown: super::Shutdown, hold: Rc<RefCell<Hold>>) {
    let mut halted = shutdown.watch();
    let mut told = super::Halt::Run;
    loop {
        let now = *halted.borrow_and_update();
        if now > told
            && let Some(i) = &hold.borrow().interrupt
        {
            match now {
                super::Halt::Stop => i.stop(),
                super::Halt::Kill => i.kill(),
                super::Halt::Run => {}
            }
            told = now;
        }
        if halted.changed().await.is_err() {
            return;
        }
    }
}

/// How a step the runner was stopped in ended: the job as this runner last saved it, its lease
/// handed back so that any runner may take it up at once.
fn halted_end(store: &dyn JobStore, lease: &Lease, step: &Step, saved: JobState) -> StepEnd {
    let handed = match store.release(lease) {
        Ok(()) => "its lease was handed back: the next `oneshot job run` continues it".to_string(),
        Err(e) => format!("its lease could not be handed back ({e}): it expires on its own"),
    };
    let session = match &step.job.session {
        Some(id) if saved == JobState::Executing => format!("session {id} paused; "),
        _ => String::new(),
    };
    StepEnd {
        job: step.job.id.clone(),
        state: saved,
        reason: step.job.reason.clone(),
        lost: None,
        failed: None,
        lease_until_ms: None,
        paused: Some(format!("{session}{handed}")),
    }
}

/// How a step this runner could not carry on ended: the job as the store has it (reading
/// works on a full disk), in the last state this runner saved, and when its lease lapses.
fn failed_end(store: &dyn JobStore, lease: &Lease, saved: JobState, why: String) -> StepEnd {
    let job = store.get(&lease.job).ok();
    let until = store
        .lease(&lease.job)
        .ok()
        .flatten()
        .filter(|l| l.runner == lease.runner && l.fence == lease.fence)
        .map(|l| l.until_ms);
    StepEnd {
        job: lease.job.clone(),
        state: job.as_ref().map_or(saved, |j| j.state),
        reason: job.and_then(|j| j.reason),
        lost: None,
        failed: Some(why),
        lease_until_ms: until,
        paused: None,
    }
}

/// How a step this runner lost ended, in the store's words: where the job is now and who moved
/// it from where. The core's own state is not the truth then: it went on (a killed session
/// reads as a transient failure, so EXECUTING → RECOVERING) but could not save.
fn lost_end(store: &dyn JobStore, id: &str, saved: JobState, why: String) -> StepEnd {
    let job = store.get(id).ok();
    let last = store.history(id).ok().and_then(|h| h.into_iter().last());
    match (job, last) {
        // Mid-step, `cancel` is the one verb a human may give (it revokes the lease).
        (Some(job), Some(t)) if t.to == job.state && t.trigger.is_verb() => {
            let verb = match t.trigger {
                crate::job::JobTrigger::Cancel => "canceled".to_string(),
                other => other.name().to_string(),
            };
            StepEnd {
                job: id.to_string(),
                state: job.state,
                reason: job.reason,
                lost: Some(format!(
                    "{verb} by {} while it was {}; this runner stopped its work on it",
                    t.by, t.from
                )),
                failed: None,
                lease_until_ms: None,
                paused: None,
            }
        }
        (Some(job), _) => StepEnd {
            job: id.to_string(),
            state: job.state,
            reason: job.reason,
            lost: Some(why),
            failed: None,
            lease_until_ms: None,
            paused: None,
        },
        (None, _) => StepEnd {
            job: id.to_string(),
            state: saved,
            reason: None,
            lost: Some(why),
            failed: None,
            lease_until_ms: None,
            paused: None,
        },
    }
}

/// Renews the lease every third of its life; on refusal says why and kills the session.
async fn heartbeat(
    store: Arc<dyn JobStore>,
    mut lease: Lease,
    ttl: std::time::Duration,
    hold: Rc<RefCell<Hold>>,
) {
    let every = ttl / super::HEARTBEATS_PER_LEASE;
    loop {
        tokio::time::sleep(every).await;
        let (l, ttl_ms) = (lease.clone(), ttl.as_millis() as u64);
        match off_loop(&store, move |s| s.heartbeat(&l, ttl_ms)).await {
            Ok(renewed) => lease = renewed,
            Err(JobStoreError::Fenced { .. }) | Err(JobStoreError::NotFound { .. }) => {
                let mut h = hold.borrow_mut();
                h.stop = Some(Stop::Lost(format!(
                    "lost the lease on job {}: a human canceled it or another runner took it \
                     over; its session was stopped",
                    lease.job
                )));
                if let Some(i) = &h.interrupt {
                    i.kill();
                }
                return;
            }
            // A busy or briefly unreadable store: try again at the next beat, while the
            // lease still has two thirds of its life.
            Err(e) => tracing::warn!("heartbeat of job {}: {e}", lease.job),
        }
    }
}

fn workspace_of(step: &Step) -> Workspace {
    step.job.workspace.clone().unwrap_or_else(|| Workspace {
        path: step.job.spec.source.clone(),
        branch: None,
        base_commit: None,
    })
}

async fn provision(step: &Step, opts: &RunnerOptions) -> RunnerEvent {
    let id = step.job.id.clone();
    let spec = step.job.spec.clone();
    let root = opts.state_dir.join("worktrees");
    let made = tokio::task::spawn_blocking(move || workspace::provision(&id, &spec, &root)).await;
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

/// Writes the job as the step moved it, redacted; when it could not, why the step stops.
pub(super) async fn save(
    store: &Arc<dyn JobStore>,
    lease: &Lease,
    redactor: &crate::redact::Redactor,
    job: &crate::job::record::Job,
    transition: Option<&crate::job::record::Transition>,
) -> Result<(), Stop> {
    let sealed = |e: crate::redact::SealError| Stop::Failed(e.to_string());
    let job = redactor.seal(job).map_err(sealed)?;
    let transition = transition
        .map(|t| redactor.seal(t))
        .transpose()
        .map_err(sealed)?;
    let lease = lease.clone();
    off_loop(store, move |s| s.advance(&lease, &job, transition.as_ref()))
        .await
        .map_err(|e| Stop::from_store(&e))
}

/// Runs `f` on the store off the runner's thread, which every session it drives shares: a
/// write may wait seconds for SQLite's lock (another process writing), and the agents' output,
/// timers and heartbeats must not wait with it.
pub(super) async fn off_loop<T: Send + 'static>(
    store: &Arc<dyn JobStore>,
    f: impl FnOnce(&dyn JobStore) -> T + Send + 'static,
) -> T {
    let store = Arc::clone(store);
    match tokio::task::spawn_blocking(move || f(&*store)).await {
        Ok(v) => v,
        // A store call that panicked: the step's task panics as it would have.
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

async fn harvest(ws: Workspace, message: crate::redact::Redacted<String>) -> RunnerEvent {
    let done = tokio::task::spawn_blocking(move || workspace::harvest(&ws, &message)).await;
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
