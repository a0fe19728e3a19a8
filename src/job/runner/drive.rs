//! Driving one claimed step, shaped like the session engine: the core decides, and one
//! `select!` loop carries out the effect in flight while it watches the lease's heartbeats
//! (a refused renewal is a lost lease: the session is killed, nothing more is written) and the
//! runner's shutdown (a running session is paused or killed, a backoff wait is cut short),
//! until the job rests.

use super::hands::{Hands, RealHands};
use super::session::JobPolicy;
use super::watch::{Input, Response, Stop, Watch};
use super::{Halt, Note, RunnerOptions};
use crate::engine::Interrupt;
use crate::job::JobState;
use crate::job::record::Workspace;
use crate::job::step::{JobEffect, JobJudge, RunnerEvent, Step};
use crate::job::store::{Claim, JobStore, JobStoreError, Lease};
use crate::pipeline::now_ms;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// How a step ended: where the job is, and how the step came to end there.
#[derive(Debug, Clone, PartialEq)]
pub struct StepEnd {
    /// The job.
    pub job: String,
    /// The state it rests in; when the runner lost it, the state the store has now (CANCELED
    /// after a human's cancel), never one this runner reached but could not save.
    pub state: JobState,
    /// Why, in words.
    pub reason: Option<String>,
    /// How the step ended.
    pub ended: Ended,
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Ended {
    /// The job rests where this runner put it.
    Rested,
    /// The runner lost its lease (a human canceled the job, or another runner took it over)
    /// or could not write: the step's outcome is not this runner's to record. Says who moved
    /// the job from which state when the store knows (`canceled by ana while it was
    /// EXECUTING; …`).
    Lost(String),
    /// The runner could not carry the step on — the disk is full, the store failed — and
    /// stopped it where it was, in a transient state, writing nothing more. The job stays
    /// under this runner's lease, which no heartbeat renews now, and once it expires the next
    /// runner's claim (never this runner's) recovers the job from there. A failure of the
    /// run, unlike [`Ended::Lost`].
    Failed {
        /// Why, in words.
        why: String,
        /// When the lease left on the job expires (ms since the epoch), if the store could say.
        lease_until_ms: Option<u64>,
    },
    /// The runner was stopped ([`super::Shutdown`], a Ctrl-C) before the job rested: its
    /// session, if one ran, paused (INTERRUPTED), and its lease was handed back, so any
    /// runner's next claim continues the job from its state. What was left where, in words.
    Paused(String),
}

/// Drives `claim` until the job rests or the lease is lost, with the runner's real hands and
/// the job's policy as judge; `changes` wakes the relay of the job's messages.
pub(super) async fn drive(
    store: Arc<dyn JobStore>,
    claim: Claim,
    opts: &RunnerOptions,
    changes: std::rc::Rc<super::relay::Changes>,
) -> StepEnd {
    let policy = JobPolicy::new(&claim.job.spec);
    let mut judge = policy.judge();
    let redactor = crate::job::redactor(claim.job.spec.policy.as_deref());
    let mut hands = RealHands::new(
        opts,
        &policy,
        Arc::clone(&store),
        claim.lease.clone(),
        redactor,
        changes,
    );
    step_loop(store, claim, opts, &mut hands, &mut judge).await
}

/// What came of the effect in flight.
enum Flight {
    /// What happened, for the core.
    Event(RunnerEvent),
    /// A write went through, or a backoff was waited out.
    Done,
    /// The step ends here.
    Stop(Stop),
}

/// The step's loop: pops the core's effects one at a time and carries each out while watching
/// the heartbeat and the shutdown switch; feeds what happened back to the core.
pub(crate) async fn step_loop<H: Hands>(
    store: Arc<dyn JobStore>,
    claim: Claim,
    opts: &RunnerOptions,
    hands: &mut H,
    judge: &mut dyn JobJudge,
) -> StepEnd {
    let lease = claim.lease.clone();
    // Everything this step writes — the job, its transitions, artifacts, decisions, the commit
    // — goes through the job's redactor.
    let redactor = crate::job::redactor(claim.job.spec.policy.as_deref());
    let mut core = Step::new(claim.job, opts.runner.clone());
    let mut queue = VecDeque::new();
    let mut stop = None;
    let claimed = RunnerEvent::Claimed {
        reclaimed: claim.reclaimed,
    };
    match core.step(now_ms(), claimed, judge) {
        Ok(fx) => queue.extend(fx),
        Err(e) => stop = Some(unexpected(&e)),
    }
    let every = opts.lease_ttl / super::HEARTBEATS_PER_LEASE;
    let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut renewal: Option<tokio::task::JoinHandle<Result<Lease, JobStoreError>>> = None;
    // The lease and the switch as this step sees them: the arms below only hear, it decides.
    let mut watch = Watch::new(&lease.job, opts.lease_ttl, tokio::time::Instant::now());
    let mut halted = opts.shutdown.watch();
    let mut watching = true;
    let mut interrupt: Option<Interrupt> = None;
    // The last state the store accepted from this runner: what the job was when it was lost,
    // should the store not say more.
    let mut saved = core.job.state();
    while stop.is_none() {
        let Some(effect) = queue.pop_front() else {
            break;
        };
        if effect == JobEffect::Done {
            break;
        }
        // Stopped: what was decided is still written; nothing new starts.
        let writes = matches!(
            effect,
            JobEffect::Save { .. } | JobEffect::AddArtifact(_) | JobEffect::Decided(_)
        );
        if !writes && opts.shutdown.halt() != Halt::Run {
            stop = Some(Stop::Halted);
            break;
        }
        // A backoff is waited for on its own, the one wait a stop cuts short.
        let (effect, wait) = split_backoff(effect);
        if wait.is_some() {
            queue.push_front(effect.clone());
        }
        let saving = match &effect {
            JobEffect::Save { job, transition } => Some((job.state(), transition.clone())),
            _ => None,
        };
        // A save that puts the job to rest hands the lease back itself: a renewal refused
        // meanwhile says so, not that the job was lost (the save is fenced: it fails if it was).
        let resting = saving.as_ref().is_some_and(|(state, _)| state.is_resting());
        watch.flight(resting, wait.is_some());
        let running = matches!(effect, JobEffect::RunSession);
        let landed = {
            let flight: Pin<Box<dyn Future<Output = Flight> + '_>> = match wait {
                Some(after) => Box::pin(async move {
                    tokio::time::sleep(after).await;
                    Flight::Done
                }),
                None => carry(
                    effect,
                    &core,
                    &mut *hands,
                    &store,
                    &lease,
                    &redactor,
                    opts.lease_ttl.as_millis() as u64,
                ),
            };
            let mut flight = flight;
            loop {
                // Evaluated even when its arm is off: a far instant then.
                let lapse_at = watch.lapse_at();
                let far = tokio::time::Instant::now() + Duration::from_secs(86_400);
                let input = tokio::select! {
                    out = &mut flight => break out,
                    _ = beat.tick(), if !watch.renewing() => Input::Beat,
                    _ = tokio::time::sleep_until(lapse_at.unwrap_or(far)), if lapse_at.is_some() => {
                        Input::Lapsing
                    }
                    renewed = async { renewal.as_mut().expect("guarded").await }, if renewal.is_some() => {
                        renewal = None;
                        match renewed {
                            Ok(answer) => Input::Renewed(answer.map(drop)),
                            Err(e) => Input::RenewalPanicked(e.to_string()),
                        }
                    }
                    changed = halted.changed(), if watching => {
                        if changed.is_err() {
                            watching = false;
                            continue;
                        }
                        Input::Halt(*halted.borrow_and_update())
                    }
                };
                match watch.on(tokio::time::Instant::now(), input) {
                    Response::Nothing => {}
                    Response::Renew => {
                        let (l, ttl) = (lease.clone(), opts.lease_ttl.as_millis() as u64);
                        let s = Arc::clone(&store);
                        renewal = Some(tokio::task::spawn_blocking(move || s.heartbeat(&l, ttl)));
                    }
                    Response::Warn(what) => tracing::warn!("{what}"),
                    Response::Tell(halt) => pass_on(halt, interrupt.as_ref()),
                    Response::End {
                        stop: why,
                        tell,
                        now,
                    } => {
                        if let Some(halt) = tell {
                            pass_on(halt, interrupt.as_ref());
                        }
                        if now {
                            break Flight::Stop(why);
                        }
                        stop = Some(why);
                    }
                }
            }
        };
        if stop.is_some() {
            break;
        }
        let event = match landed {
            Flight::Stop(why) => {
                stop = Some(why);
                break;
            }
            Flight::Done => {
                if let Some((state, t)) = saving {
                    saved = state;
                    if let Some(t) = t {
                        // The one place a runner's transitions commit: what needs a human
                        // is sent from here (`crate::notify`).
                        if let Some(n) = &opts.notify {
                            n.entered(&core.job, &t);
                        }
                        (opts.on_note)(&Note::Moved {
                            job: core.job.id.clone(),
                            transition: t,
                        });
                    }
                }
                continue;
            }
            Flight::Event(e) => e,
        };
        if running {
            interrupt = None;
            if opts.shutdown.halt() != Halt::Run {
                // Paused by the stop, not ended: its end is not the job's to judge. The next
                // claim resumes it.
                stop = Some(Stop::Halted);
                break;
            }
        }
        let made = matches!(event, RunnerEvent::SessionMade { .. });
        match core.step(now_ms(), event, judge) {
            Ok(fx) => queue.extend(fx),
            Err(e) => stop = Some(unexpected(&e)),
        }
        if made {
            interrupt = hands.interrupter();
            // A stop that came while the session was being made: passed on at once.
            pass_on(opts.shutdown.halt(), interrupt.as_ref());
        }
    }
    if let Some(r) = renewal.take() {
        r.abort();
    }
    match stop {
        // What the store says of the job now, read off the loop's thread like every store call.
        Some(Stop::Lost(why)) => {
            let id = core.job.id.clone();
            off_loop(&store, move |s| lost_end(s, &id, saved, why)).await
        }
        Some(Stop::Failed(why)) => {
            off_loop(&store, move |s| failed_end(s, &lease, saved, why)).await
        }
        Some(Stop::Halted) => {
            let job = core.job.clone();
            off_loop(&store, move |s| halted_end(s, &lease, &job, saved)).await
        }
        None => StepEnd {
            job: core.job.id.clone(),
            state: core.job.state(),
            reason: core.job.reason_words(),
            ended: Ended::Rested,
        },
    }
}

/// An event the core did not take: a bug, said rather than ended on quietly. The job stays
/// where it was saved, for the next runner once the lease lapses.
fn unexpected(e: &crate::job::step::StepError) -> Stop {
    Stop::Failed(format!("internal error: {e}; the step stopped there"))
}

/// Tells the running session: pause it, or kill its agent.
fn pass_on(halt: Halt, interrupt: Option<&Interrupt>) {
    match (halt, interrupt) {
        (Halt::Stop, Some(i)) => i.stop(),
        (Halt::Kill, Some(i)) => i.kill(),
        _ => {}
    }
}

/// An effect with a backoff, as the wait and the effect without it.
fn split_backoff(effect: JobEffect) -> (JobEffect, Option<Duration>) {
    match effect {
        JobEffect::Provision { after } if !after.is_zero() => (
            JobEffect::Provision {
                after: Duration::ZERO,
            },
            Some(after),
        ),
        JobEffect::Recover { session, after } if !after.is_zero() => (
            JobEffect::Recover {
                session,
                after: Duration::ZERO,
            },
            Some(after),
        ),
        e => (e, None),
    }
}

/// Carries out one effect: a write to the store (off the loop's thread), or the world's part
/// through `hands`. `Done` needs no future and never gets here.
fn carry<'a, H: Hands>(
    effect: JobEffect,
    core: &'a Step,
    hands: &'a mut H,
    store: &'a Arc<dyn JobStore>,
    lease: &'a Lease,
    redactor: &'a crate::redact::Redactor,
    ttl_ms: u64,
) -> Pin<Box<dyn Future<Output = Flight> + 'a>> {
    let job = &core.job;
    match effect {
        JobEffect::Save {
            job: snapshot,
            transition,
        } => Box::pin(async move {
            match save(store, lease, redactor, &snapshot, transition.as_ref()).await {
                Ok(()) => Flight::Done,
                Err(e) => Flight::Stop(e),
            }
        }),
        JobEffect::AddArtifact(a) => Box::pin(async move {
            append(store, lease, redactor, &a, |s, l, a| s.add_artifact(l, a)).await
        }),
        JobEffect::Decided(d) => Box::pin(async move {
            append(store, lease, redactor, &d, |s, l, d| s.add_decision(l, d)).await
        }),
        JobEffect::Done => Box::pin(async { Flight::Done }),
        JobEffect::Abandon { reason } => Box::pin(async { Flight::Stop(Stop::Failed(reason)) }),
        JobEffect::Provision { .. } => {
            Box::pin(async move { Flight::Event(hands.provision(job).await) })
        }
        JobEffect::Execute { prompt, resume } => Box::pin(async move {
            let ws = workspace_of(job);
            Flight::Event(hands.make_session(job, &ws, prompt, resume).await)
        }),
        JobEffect::RunSession => {
            Box::pin(async move { Flight::Event(hands.run_session(&job.id).await) })
        }
        JobEffect::Recover { session, .. } => {
            Box::pin(async move { Flight::Event(hands.inspect(job, session).await) })
        }
        JobEffect::ReadSession(id) => {
            Box::pin(async move { Flight::Event(hands.read_session(id).await) })
        }
        JobEffect::Harvest { message } => Box::pin(async move {
            // A harvest commits, and pushes a remote's branch: a runner that lost the job
            // (stopped past its lease, then woke) must find out before, not at its next
            // heartbeat — its late push would be refused anyway, but it would make the
            // runner that holds the job now fetch again.
            let l = lease.clone();
            if let Err(e) = off_loop(store, move |s| s.heartbeat(&l, ttl_ms)).await {
                return Flight::Stop(Stop::from_store(&e));
            }
            let author = job.spec.author.clone();
            let message = redactor.text(&message);
            Flight::Event(hands.harvest(workspace_of(job), message, author).await)
        }),
        JobEffect::Audit(panel) => Box::pin(async move {
            let ws = workspace_of(job);
            Flight::Event(hands.audit(job, &ws, &panel).await)
        }),
        JobEffect::Decide(_) | JobEffect::Land => Box::pin(async {
            Flight::Stop(Stop::Failed(
                "internal error: a human's verb reached a runner's step".into(),
            ))
        }),
    }
}

/// How a step the runner was stopped in ended: the job as this runner last saved it, its lease
/// handed back so that any runner may take it up at once.
fn halted_end(
    store: &dyn JobStore,
    lease: &Lease,
    job: &crate::job::record::Job,
    saved: JobState,
) -> StepEnd {
    let handed = match store.release(lease) {
        Ok(()) => "its lease was handed back: the next `oneshot job run` continues it".to_string(),
        Err(e) => format!("its lease could not be handed back ({e}): it expires on its own"),
    };
    let session = match job.session() {
        Some(id) if saved == JobState::Executing => format!("session {id} paused; "),
        _ => String::new(),
    };
    StepEnd {
        job: job.id.clone(),
        state: saved,
        reason: job.reason_words(),
        ended: Ended::Paused(format!("{session}{handed}")),
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
        state: job.as_ref().map_or(saved, |j| j.state()),
        reason: job.and_then(|j| j.reason).map(|r| r.to_string()),
        ended: Ended::Failed {
            why,
            lease_until_ms: until,
        },
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
        (Some(job), Some(t)) if t.to == job.state() && t.trigger.is_verb() => {
            let verb = match t.trigger {
                crate::job::JobTrigger::Cancel => "canceled".to_string(),
                other => other.name().to_string(),
            };
            StepEnd {
                job: id.to_string(),
                state: job.state(),
                reason: job.reason.map(|r| r.to_string()),
                ended: Ended::Lost(format!(
                    "{verb} by {} while it was {}; this runner stopped its work on it",
                    t.by, t.from
                )),
            }
        }
        (Some(job), _) => StepEnd {
            job: id.to_string(),
            state: job.state(),
            reason: job.reason.map(|r| r.to_string()),
            ended: Ended::Lost(why),
        },
        (None, _) => StepEnd {
            job: id.to_string(),
            state: saved,
            reason: None,
            ended: Ended::Lost(why),
        },
    }
}

fn workspace_of(job: &crate::job::record::Job) -> Workspace {
    job.workspace.clone().unwrap_or_else(|| Workspace {
        path: job.spec.source.clone(),
        branch: None,
        base_commit: None,
        base_branch: None,
    })
}

/// Appends `record` to the job's records with `write`, through the job's redactor, under the
/// lease, off the loop's thread.
async fn append<T, R>(
    store: &Arc<dyn JobStore>,
    lease: &Lease,
    redactor: &crate::redact::Redactor,
    record: &T,
    write: impl FnOnce(&dyn JobStore, &Lease, &crate::redact::Redacted<T>) -> Result<R, JobStoreError>
    + Send
    + 'static,
) -> Flight
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
    R: Send + 'static,
{
    let sealed = match redactor.seal(record) {
        Ok(sealed) => sealed,
        Err(e) => return Flight::Stop(Stop::Failed(format!("job {}: {e}", lease.job))),
    };
    let l = lease.clone();
    match off_loop(store, move |s| write(s, &l, &sealed)).await {
        Ok(_) => Flight::Done,
        Err(e) => Flight::Stop(Stop::from_store(&e)),
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
