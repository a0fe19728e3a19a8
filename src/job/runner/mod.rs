//! The job runner: claims steps from a [`JobStore`] and carries them out.
//!
//! # How it works
//!
//! Each claimed step is driven by `drive`, shaped like the session engine: the decision core
//! ([`super::step::Step`]) says what to do, and one `select!` loop carries out the effect in
//! flight — provision the workspace (git, on the blocking pool), make and run the session (an
//! [`crate::Engine`] on this thread), harvest, ask a panel of auditors in parallel — while it
//! renews the step's lease every third of its life and watches the shutdown switch. When the
//! store refuses a renewal (another runner reclaimed the job, or a human canceled it) the
//! session is killed and nothing more is written; a stop pauses the session, cuts a backoff
//! short and hands the lease back. `run` keeps up to `parallel` steps going on one
//! current-thread runtime (the engine holds Lua states and is not `Send`), all sharing it, and
//! waits for new work on the store's signal ([`crate::job::store::Signals::wait_for_work`]).

mod admit;
mod drive;
mod hands;
mod panel;
mod relay;
mod session;
mod ship;
#[cfg(test)]
mod tests;
mod watch;

pub use session::Player;

use super::store::{JobStore, JobStoreError};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;

pub use drive::{Ended, StepEnd};

/// How a runner runs.
#[derive(Clone)]
pub struct RunnerOptions {
    /// The state directory: sessions in `sessions/`, workspaces in `worktrees/`.
    pub state_dir: PathBuf,
    /// This runner's id, written with its leases and transitions.
    pub runner: String,
    /// How long a lease lasts without a heartbeat (heartbeats come every third of it); at
    /// least [`MIN_LEASE`].
    pub lease_ttl: Duration,
    /// Steps run at once.
    pub parallel: usize,
    /// Stop after this many steps (all jobs' together).
    pub max_steps: Option<usize>,
    /// Step only this job.
    pub only: Option<String>,
    /// Told each move of each job, as it happens.
    pub on_note: Rc<dyn Fn(&Note)>,
    /// How the caller stops the run ([`Shutdown::stop`] on a Ctrl-C).
    pub shutdown: Shutdown,
    /// Tell [`Note::Session`] the agents' output lines and accounts too, not only the
    /// sessions' transitions and warnings. Off by default: a thousand sessions' lines cost
    /// what nobody reads (they are in each session's log either way).
    pub session_output: bool,
    /// Keep running when nothing is left to claim — a fleet's runner waiting for work — until
    /// [`RunnerOptions::shutdown`] stops it; a store that fails (unreachable, restarting) is
    /// tried again with a growing pause ([`Note::StoreUnreachable`]) instead of ending the run.
    pub wait: bool,
    /// Sends the needs-a-human events of `[notify]` (`crate::notify`): the jobs this runner
    /// moves into APPROVAL_REQUIRED or INTERVENTION_REQUIRED, its sessions' stalled agents
    /// and budgets at 80 %. `None`: nothing is sent.
    pub notify: Option<Arc<crate::notify::Notifier>>,
    /// Memory to keep free (`job run --reserve`): no step is claimed while less is available
    /// ([`crate::sandbox::admission`]), and with a reserve the runner claims one step at a time
    /// so that each start is judged against the memory the previous left. `None`: no check.
    pub reserve: Option<crate::sandbox::admission::Reserve>,
}

impl RunnerOptions {
    /// A runner over the state directory `state_dir` with the defaults `oneshot job run` has:
    /// a fresh runner id, a 30 s lease, one step at a time, until nothing is left, told nothing.
    pub fn new(state_dir: impl Into<PathBuf>) -> RunnerOptions {
        RunnerOptions {
            state_dir: state_dir.into(),
            runner: runner_id(),
            lease_ttl: Duration::from_secs(30),
            parallel: 1,
            max_steps: None,
            only: None,
            on_note: Rc::new(|_| {}),
            shutdown: Shutdown::new(),
            session_output: false,
            wait: false,
            notify: None,
            reserve: None,
        }
    }
}

/// How far a runner has been asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Halt {
    /// Run on.
    Run,
    /// Claim nothing more; pause the running sessions (INTERRUPTED, resumable) and hand their
    /// jobs' leases back, so that any runner may claim them at once.
    Stop,
    /// As [`Halt::Stop`], but kill the running agents now.
    Kill,
}

/// Stops a runner from outside its loop (a signal handler's task, another thread): the
/// first ask is [`Shutdown::stop`], the next [`Shutdown::kill`]. Clones share one switch.
#[derive(Clone)]
pub struct Shutdown {
    tx: Arc<tokio::sync::watch::Sender<Halt>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown::new()
    }
}

impl std::fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shutdown({:?})", self.halt())
    }
}

impl Shutdown {
    /// A switch at [`Halt::Run`].
    pub fn new() -> Shutdown {
        Shutdown {
            tx: Arc::new(tokio::sync::watch::channel(Halt::Run).0),
        }
    }

    /// Claim nothing more; pause the running sessions and hand their leases back.
    pub fn stop(&self) {
        self.raise(Halt::Stop);
    }

    /// Kill the running agents now (and stop as [`Shutdown::stop`] does).
    pub fn kill(&self) {
        self.raise(Halt::Kill);
    }

    /// How far the runner has been asked to stop.
    pub fn halt(&self) -> Halt {
        *self.tx.borrow()
    }

    fn raise(&self, to: Halt) {
        self.tx.send_if_modified(|h| {
            let raised = to > *h;
            *h = (*h).max(to);
            raised
        });
    }

    /// Wakes when the switch moves.
    pub(crate) fn watch(&self) -> tokio::sync::watch::Receiver<Halt> {
        self.tx.subscribe()
    }
}

/// What the runner tells its caller as it goes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Note {
    /// A job moved.
    Moved {
        /// The job.
        job: String,
        /// The move.
        transition: super::record::Transition,
    },
    /// A step ended (the job rests, or the runner lost it).
    Ended(StepEnd),
    /// A waiting runner ([`RunnerOptions::wait`]) could not reach the store: it tries again
    /// after `retry_in`. Its running steps go on; each stops its agents if its lease cannot be
    /// renewed in time.
    StoreUnreachable {
        /// What the store said.
        error: String,
        /// When the runner tries again.
        retry_in: Duration,
    },
    /// Less memory is available than the runner's reserve ([`RunnerOptions::reserve`]): it
    /// claims nothing until there is. Told once when it starts holding back.
    MemoryLow {
        /// Available, in bytes.
        available: u64,
        /// The reserve, in bytes.
        reserve: u64,
        /// Jobs waiting to be claimed (PENDING) as it starts holding back.
        held: usize,
    },
    /// Memory freed after a [`Note::MemoryLow`]: the runner claims steps again.
    MemoryFreed {
        /// Available, in bytes.
        available: u64,
        /// The reserve, in bytes.
        reserve: u64,
    },
    /// Something happened in the session a job's EXECUTING runs: its transitions, warnings,
    /// and — when [`RunnerOptions::session_output`] asks — its agents' lines and accounts.
    Session {
        /// The job.
        job: String,
        /// What happened, as [`crate::Engine::run`]'s observer is told it.
        update: crate::engine::Update,
    },
}

/// How often a runner holding back for memory looks again.
pub const ADMISSION_POLL: Duration = Duration::from_secs(1);

/// How often a runner with room for more steps looks for work other processes added (its own
/// process's writes wake it at once).
pub const WORK_POLL: Duration = Duration::from_millis(500);

/// Heartbeats a lease lasts: the runner renews it every `lease / HEARTBEATS_PER_LEASE`, so a
/// lease outlives two late or failed renewals.
pub const HEARTBEATS_PER_LEASE: u32 = 3;

/// The shortest lease a runner takes: three heartbeats a third of a second apart. A renewal
/// is a store write that waits its turn on the runner's one thread (shared by every step it
/// drives) and behind other processes' writes; a lease much shorter lapses while its runner
/// still works on the step, and is then another runner's to claim.
pub const MIN_LEASE: Duration = Duration::from_secs(1);

/// Why a run stopped short.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] JobStoreError),
    /// The runtime [`run_blocking`] needs could not be made.
    #[error("start the runner's runtime: {0}")]
    Runtime(#[from] std::io::Error),
    /// The lease asked for is shorter than [`MIN_LEASE`].
    #[error(
        "a lease of {} is too short: the minimum is {}; {}",
        humantime::format_duration(*.0),
        humantime::format_duration(MIN_LEASE),
        LEASE_WHY
    )]
    LeaseTooShort(Duration),
}

/// What a too-short lease's error says after the numbers.
const LEASE_WHY: &str = "a runner renews its lease every third of it, and a renewal may wait \
     behind the store's other writers; a lease that lapses mid-step lets a runner take the job \
     over while it still runs — give --lease 1s or more (the default is 30s)";

/// Whether `lease` is long enough for a runner to hold a step with: [`RunnerError::LeaseTooShort`]
/// when it is shorter than [`MIN_LEASE`].
pub fn check_lease(lease: Duration) -> Result<(), RunnerError> {
    if lease < MIN_LEASE {
        return Err(RunnerError::LeaseTooShort(lease));
    }
    Ok(())
}

/// A runner id unique to this process and call: `HOST-PID-NONCE-N`. The nonce is random per
/// process, so a later process that happens to get the same pid (a container's pid 1 after a
/// restart) is a different runner: a claim skips only jobs whose lease names its own runner,
/// and a dead runner's jobs must stay claimable by whoever comes next.
pub fn runner_id() -> String {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    static NONCE: OnceLock<u16> = OnceLock::new();
    // `RandomState` is seeded from the OS's randomness: no crate needed for four hex digits.
    let nonce = NONCE.get_or_init(|| RandomState::new().hash_one(std::process::id()) as u16);
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "host".into());
    format!(
        "{host}-{}-{nonce:04x}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Claims and drives steps until none is left to claim (or `max_steps` ran, or
/// [`RunnerOptions::shutdown`] stops it), `parallel` at a time; returns how each step ended. Must be polled inside a [`tokio::task::LocalSet`].
/// Refuses a `lease_ttl` shorter than [`MIN_LEASE`] before claiming anything.
///
/// A job this runner's lease names is never claimed again by it, even once that lease has
/// lapsed (the store's claim skips it): either one of its steps still drives the job — its
/// heartbeat came late — or a step gave the job up mid-way (a full disk), and the job is the
/// next runner's once the lease expires, not this run's to fail on again.
pub async fn run(
    store: Arc<dyn JobStore>,
    opts: RunnerOptions,
) -> Result<Vec<StepEnd>, RunnerError> {
    check_lease(opts.lease_ttl)?;
    let mut running = JoinSet::new();
    let mut ends = Vec::new();
    let mut claimed = 0usize;
    let parallel = opts.parallel.max(1);
    let mut halted = opts.shutdown.watch();
    // At most one thread waits for the store's work signal at a time, kept across turns.
    let mut waiter: Option<tokio::task::JoinHandle<bool>> = None;
    let mut since = store.work_seen();
    // The runner's row, for `job runners` on any machine: made now, its heartbeat moved on
    // every third of a lease, gone when the run ends cleanly.
    let mut beat = presence(&opts);
    let mut beats = tokio::time::interval(opts.lease_ttl / 3);
    beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A waiting runner whose store failed claims nothing until then.
    let mut retry_at: Option<tokio::time::Instant> = None;
    let mut backoff = Backoff::default();
    // The store's changes, heard for the relays of all the steps' sessions at once.
    let changes = relay::Changes::new(Arc::clone(&store));
    // Holding back for memory: since when it said so, and when it looks again.
    let mut holding = false;
    let mut admit_at: Option<tokio::time::Instant> = None;
    // Events a runner that died left unclaimed: sent now, once (see `crate::notify`).
    if let Some(n) = &opts.notify {
        n.sweep();
    }
    loop {
        let room = opts.max_steps.is_none_or(|m| claimed < m) && opts.shutdown.halt() == Halt::Run;
        let may_claim = retry_at.is_none_or(|t| tokio::time::Instant::now() >= t);
        let mut admitted = true;
        if room && may_claim && running.len() < parallel {
            admitted = admit::admit(&store, &opts, &mut holding, &mut beat).await;
            admit_at = (!admitted).then(|| tokio::time::Instant::now() + ADMISSION_POLL);
        }
        if room && may_claim && admitted && running.len() < parallel {
            retry_at = None;
            // Taken before looking, so that work added while we look wakes the wait below.
            since = store.work_seen();
            let ttl = opts.lease_ttl.as_millis() as u64;
            let (runner, only) = (opts.runner.clone(), opts.only.clone());
            // Every free slot filled by one claim (one statement on PostgreSQL), not one
            // claim a slot: a runner starting on a backlog, or freed of several steps at
            // once, costs the store one round trip.
            let mut free =
                (parallel - running.len()).min(opts.max_steps.map_or(usize::MAX, |m| m - claimed));
            if opts.reserve.is_some() {
                free = free.min(1);
            }
            let claimed_now = drive::off_loop(&store, move |s| match only {
                Some(only) => Ok(s.claim(&runner, Some(&only), ttl)?.into_iter().collect()),
                None => s.claim_up_to(&runner, ttl, free),
            })
            .await;
            match claimed_now {
                Ok(claims) if !claims.is_empty() => {
                    backoff = Backoff::default();
                    claimed += claims.len();
                    for claim in claims {
                        let store = Arc::clone(&store);
                        let opts = opts.clone();
                        let changes = std::rc::Rc::clone(&changes);
                        running.spawn_local(async move {
                            drive::drive(store, claim, &opts, changes).await
                        });
                    }
                    continue;
                }
                Ok(_) if running.is_empty() && !opts.wait => break,
                Ok(_) => backoff = Backoff::default(),
                Err(e) if opts.wait => {
                    let retry_in = backoff.next();
                    (opts.on_note)(&Note::StoreUnreachable {
                        error: crate::error::chain(&e),
                        retry_in,
                    });
                    retry_at = Some(tokio::time::Instant::now() + retry_in);
                }
                Err(e) => return Err(e.into()),
            }
        }
        // Held back with jobs waiting: the run waits for memory rather than end.
        let idle = (opts.wait || (holding && !admitted)) && room;
        if running.is_empty() && !idle {
            break;
        }
        // With room to spare, wait for new work too: this process's writes wake it at once,
        // other processes' are found by the slow poll.
        let looking = room && admitted && retry_at.is_none() && running.len() < parallel;
        if looking && waiter.is_none() {
            let s = Arc::clone(&store);
            waiter = Some(tokio::task::spawn_blocking(move || {
                s.wait_for_work(since, WORK_POLL)
            }));
        }
        tokio::select! {
            done = running.join_next(), if !running.is_empty() => {
                if let Some(Ok(end)) = done {
                    (opts.on_note)(&Note::Ended(end.clone()));
                    ends.push(end);
                }
                // A panicked step: its lease expires and another claim recovers the job.
            }
            _ = async { waiter.as_mut().expect("guarded").await }, if looking && waiter.is_some() => {
                waiter = None;
            }
            // A shutdown: claim nothing more (each step sees it too, and pauses).
            _ = halted.changed() => {
                halted.borrow_and_update();
            }
            _ = beats.tick() => say_alive(&store, &beat).await,
            _ = async { tokio::time::sleep_until(retry_at.expect("guarded")).await }, if retry_at.is_some() => {}
            _ = async { tokio::time::sleep_until(admit_at.expect("guarded")).await }, if admit_at.is_some() => {}
        }
    }
    // Every event claimed is delivered (or recorded failed) before the run ends.
    if let Some(n) = &opts.notify {
        n.drain().await;
    }
    let runner = opts.runner.clone();
    if let Err(e) = drive::off_loop(&store, move |s| s.runner_gone(&runner)).await {
        tracing::warn!(error = %e, "could not remove this runner's row; it reads as stale");
    }
    if waiter.is_some() {
        // Let the waiting thread go now rather than at its poll's end: the runtime waits for
        // it before the process can exit.
        super::store::work::raise();
    }
    Ok(ends)
}

/// The pauses between a waiting runner's tries of a store that failed: 0.5 s, doubling, at
/// most 30 s — a restarting database is found again within moments, a long outage costs a
/// try every half minute.
#[derive(Debug, Clone, Copy)]
struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Backoff(Duration::from_millis(500))
    }
}

impl Backoff {
    fn next(&mut self) -> Duration {
        let now = self.0;
        self.0 = (self.0 * 2).min(Duration::from_secs(30));
        now
    }
}

/// What this runner says about itself in the store's runners table.
fn presence(opts: &RunnerOptions) -> crate::job::store::RunnerBeat {
    crate::job::store::RunnerBeat {
        runner: opts.runner.clone(),
        host: nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "host".into()),
        pid: std::process::id(),
        ttl_ms: opts.lease_ttl.as_millis() as u64,
        waiting: None,
    }
}

/// One heartbeat of the runner's row. A failure is only said: the row is for people; the
/// leases, which fence the work, have heartbeats of their own.
async fn say_alive(store: &Arc<dyn JobStore>, beat: &crate::job::store::RunnerBeat) {
    let b = beat.clone();
    if let Err(e) = drive::off_loop(store, move |s| s.runner_beat(&b)).await {
        tracing::warn!(error = %e, "could not say this runner is alive");
    }
}

/// [`run`] on a runtime of its own — one thread, with a local set, as `oneshot job run` runs —
/// for a program without an async runtime; returns when [`run`] does.
pub fn run_blocking(
    store: Arc<dyn JobStore>,
    opts: RunnerOptions,
) -> Result<Vec<StepEnd>, RunnerError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // Git and file work of a few steps at a time; more threads would only contend.
        .max_blocking_threads(8)
        .build()?;
    tokio::task::LocalSet::new().block_on(&rt, run(store, opts))
}

/// Why a job cannot be stepped now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotClaimable {
    /// Its resting state does not take a step (the machine's refusal names what it allows).
    #[error(transparent)]
    Refused(#[from] super::Refused),
    /// It is mid-step and its runner's lease is live by the store's clock.
    #[error(
        "it is {state}; runner {runner} holds its lease until {until_ms} ms (a dead runner's \
         lease expires, then a step recovers the job)"
    )]
    Held {
        /// Where the step is.
        state: super::JobState,
        /// The runner holding it.
        runner: String,
        /// When its lease expires (ms since the epoch, the store's clock).
        until_ms: u64,
    },
    /// The store could not say.
    #[error(transparent)]
    Store(#[from] JobStoreError),
}

/// Whether `job` can be claimed for a step now — what [`crate::job::store::Leases::claim`] will judge, said
/// before it with the reason: a resting state that takes a step (PENDING), or a step whose
/// runner's lease has expired by the store's clock.
pub fn claimable(store: &dyn JobStore, job: &super::record::Job) -> Result<(), NotClaimable> {
    if job.state().is_resting() {
        return super::next(job.state(), super::JobTrigger::Step)
            .map(|_| ())
            .map_err(NotClaimable::from);
    }
    // A transient state: a runner is in the middle of a step, or died in it.
    match store.lease(&job.id)? {
        Some(l) if l.live_at(store.now_ms()?) => Err(NotClaimable::Held {
            state: job.state(),
            runner: l.runner,
            until_ms: l.until_ms,
        }),
        _ => Ok(()),
    }
}
