//! `job step` and `job run`: this process becomes a runner. The runner's steps share one
//! current-thread runtime (a session's engine holds Lua states and is not `Send`); git and
//! other blocking work go to a small blocking pool.

use super::{Cx, paint, store_error};
use crate::cli::exit::{self, usage};
use crate::cli::signals::Signals;
use anyhow::{Context, Result};
use clap::Args;
use oneshot::job::JobState;
use oneshot::job::runner::{self, Ended, Note, RunnerOptions, Shutdown, StepEnd};
use oneshot::job::store::JobStore;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (examples: 30s, 2m)"))
}

/// A `--lease`: a duration the runner can hold a step with (at least `runner::MIN_LEASE`).
fn parse_lease(s: &str) -> Result<Duration, String> {
    let lease = parse_duration(s)?;
    runner::check_lease(lease).map_err(|e| e.to_string())?;
    Ok(lease)
}

/// Options of `job step`.
#[derive(Debug, Args)]
pub struct StepArgs {
    /// The job [default: the claimable job waiting longest].
    #[arg(add = clap_complete::engine::ArgValueCandidates::new(crate::cli::complete::jobs))]
    pub id: Option<String>,
    /// How long the step's lease lasts without a heartbeat (heartbeats come every third of
    /// it); a runner that dies loses the job to the next runner after this long. At least 1s.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_lease)]
    pub lease: Duration,
}

/// Options of `job run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Steps run at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub parallel: u32,
    /// Stop after this many steps, all jobs' together.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
    /// How long a step's lease lasts without a heartbeat (heartbeats come every third of it).
    /// At least 1s.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_lease)]
    pub lease: Duration,
    /// Print NDJSON events on stdout instead of text: each job transition, each step's end,
    /// and a summary (docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Keep running when nothing is left, waiting for new work (a fleet's runner; stop it with
    /// Ctrl-C or SIGTERM); a store that cannot be reached is tried again with a growing pause
    /// (0.5 s up to 30 s) instead of ending the run.
    #[arg(long)]
    pub wait: bool,
    /// Memory to keep free: claim another step only while at least this much is available
    /// (MemAvailable, or the room under this process's memory cgroup limit, if smaller); until
    /// then the jobs wait, and the run says so. Sizes: 2G, 512M, 1.5GiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_reserve)]
    pub reserve: Option<oneshot::sandbox::admission::Reserve>,
}

/// A `--reserve`: a size.
fn parse_reserve(s: &str) -> Result<oneshot::sandbox::admission::Reserve, String> {
    oneshot::sandbox::admission::Reserve::parse(s).map_err(|e| e.to_string())
}

/// `job step [ID]`.
pub fn step(cx: &Cx, a: StepArgs, signals: Option<Signals>) -> Result<i32> {
    let store = cx.store()?;
    let signals = signals.context("the runner's signal handlers were not installed")?;
    if let Some(id) = &a.id {
        let job = store
            .get(id)
            .map_err(|e| store_error(&format!("step {id}"), e))?;
        claimable(&*store, &job)?;
        let ends = drive(
            cx,
            store,
            Some(job.id.clone()),
            1,
            Some(1),
            a.lease,
            signals,
            Flags::default(),
        )?;
        return finish(cx, ends, true);
    }
    let ends = drive(
        cx,
        store,
        None,
        1,
        Some(1),
        a.lease,
        signals,
        Flags::default(),
    )?;
    finish(cx, ends, true)
}

/// `job run`.
pub fn run(cx: &Cx, a: RunArgs, signals: Option<Signals>) -> Result<i32> {
    let store = cx.store()?;
    let signals = signals.context("the runner's signal handlers were not installed")?;
    let ends = drive(
        cx,
        store,
        None,
        a.parallel as usize,
        a.max_steps,
        a.lease,
        signals,
        Flags {
            json: a.json,
            wait: a.wait,
            reserve: a.reserve,
        },
    )?;
    if a.json {
        return Ok(summary(&ends));
    }
    finish(cx, ends, false)
}

/// Says why `job` cannot be stepped now, if it cannot (`oneshot::job::runner::claimable`).
fn claimable(store: &dyn JobStore, job: &oneshot::job::record::Job) -> Result<()> {
    use runner::NotClaimable;
    match runner::claimable(store, job) {
        Ok(()) => Ok(()),
        Err(NotClaimable::Store(e)) => Err(store_error(&format!("step {}", job.id), e)),
        Err(NotClaimable::Held {
            state,
            runner,
            until_ms,
        }) => Err(super::refused(format!(
            "step: {}: it is {state}; runner {runner} holds its lease until {} (a dead \
             runner's lease expires, then `job step` recovers the job)",
            job.id,
            crate::cli::show::rfc3339(until_ms)
        ))),
        Err(e) => Err(super::refused(format!("step: {}: {e}", job.id))),
    }
}

/// Runs the runner to its end on the current-thread runtime its signal handlers live on.
/// SIGINT, SIGTERM and SIGHUP stop it gracefully (nothing more claimed, the running sessions
/// paused, their jobs' leases handed back); the next one kills the agents.
#[allow(clippy::too_many_arguments)]
fn drive(
    cx: &Cx,
    store: Arc<dyn JobStore>,
    only: Option<String>,
    parallel: usize,
    max_steps: Option<usize>,
    lease: Duration,
    signals: Signals,
    flags: Flags,
) -> Result<Vec<StepEnd>> {
    let Flags {
        json,
        wait,
        reserve,
    } = flags;
    let shutdown = Shutdown::new();
    let progress = Rc::new(std::cell::RefCell::new(super::progress::Progress::new(
        cx.quiet, json,
    )));
    let noted = Rc::clone(&progress);
    let runner = runner::runner_id();
    let notify = cx
        .notify
        .as_ref()
        .and_then(|def| oneshot::notify::Notifier::new(def, &runner, Arc::clone(&store)));
    let opts = RunnerOptions {
        state_dir: cx.state_dir.clone(),
        runner,
        lease_ttl: lease,
        parallel,
        max_steps,
        only,
        on_note: Rc::new(move |note: &Note| noted.borrow_mut().note(note)),
        shutdown: shutdown.clone(),
        session_output: false,
        wait,
        notify,
        reserve,
    };
    if let Some(warning) = open_files_for(parallel) {
        errln!("oneshot: warning: {warning}");
    }
    let (rt, streams, early) = signals.split();
    let local = tokio::task::LocalSet::new();
    let forwarding = local.spawn_local(forward(streams, shutdown, early));
    let ticked = Rc::clone(&progress);
    let ticking = local.spawn_local(async move {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        loop {
            every.tick().await;
            ticked.borrow_mut().tick();
        }
    });
    let ends = local.block_on(&rt, runner::run(store, opts));
    forwarding.abort();
    ticking.abort();
    drop(local);
    progress.borrow_mut().done();
    ends.context("run the job steps")
}

/// How `job run` runs, beyond its numbers.
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    /// NDJSON events on stdout.
    json: bool,
    /// Wait for new work rather than end ([`RunnerOptions::wait`]).
    wait: bool,
    /// Memory to keep free ([`RunnerOptions::reserve`]).
    reserve: Option<oneshot::sandbox::admission::Reserve>,
}

/// Passes SIGINT, SIGTERM and SIGHUP on to the runner: the first stops it gracefully, the next
/// kills its agents.
async fn forward(streams: [tokio::signal::unix::Signal; 3], shutdown: Shutdown, early: u32) {
    crate::cli::signals::each_signal(streams, early, |count| {
        if count == 1 {
            errln!(
                "\noneshot: stopping: no new steps; pausing the running sessions and handing \
                 their jobs back (press Ctrl-C again to kill the agents now)"
            );
            shutdown.stop();
        } else {
            errln!("\noneshot: killing the running agents");
            shutdown.kill();
        }
    })
    .await
}

/// Open files one running step holds at most: the agent's three pipes, its reaper's pidfd, the
/// session's log and lock, with room to spare (measured: about six).
const FILES_PER_STEP: u64 = 10;

/// Raises this process's soft limit on open files to the hard limit (the soft default, often
/// 1,024, is far below what a thousand sessions hold; the hard one is what the administrator
/// allows), and says so when even that cannot hold `parallel` steps.
fn open_files_for(parallel: usize) -> Option<String> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    let need = parallel as u64 * FILES_PER_STEP + 64;
    if need <= soft {
        return None;
    }
    let limit = if setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    (need > limit).then(|| {
        format!(
            "--parallel {parallel} may need about {need} open files, but this process may open \
             {limit}; steps beyond that fail to start their agents — raise the limit \
             (`ulimit -n`) or lower --parallel"
        )
    })
}

/// `job run --json`'s last event, and the exit code `finish` would give.
fn summary(ends: &[StepEnd]) -> i32 {
    let count = |f: fn(&StepEnd) -> bool| ends.iter().filter(|e| f(e)).count();
    let failed = count(|e| matches!(e.ended, Ended::Failed { .. }));
    let paused = count(|e| matches!(e.ended, Ended::Paused(_)));
    let mut rested = std::collections::BTreeMap::new();
    for e in ends
        .iter()
        .filter(|e| !matches!(e.ended, Ended::Failed { .. } | Ended::Paused(_)))
    {
        *rested.entry(e.state).or_default() += 1;
    }
    let code = if failed > 0 {
        exit::FAILED
    } else if paused > 0 {
        exit::INTERRUPTED
    } else {
        exit::OK
    };
    super::progress::event(&super::progress::Event::Summary {
        steps: ends.len(),
        rested,
        failed,
        paused,
        lost: count(|e| matches!(e.ended, Ended::Lost(_))),
        exit_code: code,
    });
    code
}

/// Prints where each job rests; for `step`, nothing to step is an error. A step the runner
/// could not carry on (a full disk, a failing store) fails the command: exit 1.
fn finish(cx: &Cx, ends: Vec<StepEnd>, one: bool) -> Result<i32> {
    if ends.is_empty() {
        if one {
            return Err(usage(
                "step a job: none is claimable (no PENDING job, and no job whose runner died \
                 mid-step); `oneshot job list` shows where each rests",
            ));
        }
        if !cx.quiet {
            outln!("no job to step");
        }
        return Ok(exit::OK);
    }
    if !cx.quiet {
        let s = if ends.len() == 1 { "" } else { "s" };
        outln!("{} step{s} ran:", ends.len());
    }
    let mut failed = 0;
    let mut paused = 0;
    let mut stuck = 0;
    for e in &ends {
        let lost = match &e.ended {
            Ended::Failed {
                why,
                lease_until_ms,
            } => {
                failed += 1;
                // Whole: the OS's words ("No space left on device") may come late in git's.
                let expires = lease_until_ms
                    .map(|t| format!(" (at {})", crate::cli::show::rfc3339(t)))
                    .unwrap_or_default();
                errln!(
                    "  {}  stays in {}: {}",
                    e.job,
                    e.state,
                    crate::cli::show::one_line(why, usize::MAX)
                );
                errln!(
                    "oneshot: error: failed to finish the step of {}: it stays in {} under this \
                     runner's lease; once that expires{expires} the next `oneshot job run` (or \
                     `oneshot job step {}`) takes it up from there; fix what failed first",
                    e.job,
                    e.state,
                    e.job
                );
                continue;
            }
            Ended::Paused(what) => {
                paused += 1;
                errln!("  {}  stays in {}: {what}", e.job, e.state);
                continue;
            }
            Ended::Lost(why) => Some(why),
            _ => None,
        };
        match lost {
            // The state is the store's, not one this runner reached without saving it.
            Some(why) => errln!(
                "  {}  now {}: {}",
                e.job,
                e.state,
                crate::cli::show::one_line(why, 200)
            ),
            None if cx.quiet => outln!("{} {}", e.job, e.state),
            None => {
                let why = e
                    .reason
                    .as_deref()
                    .map(|r| format!("  ({})", crate::cli::show::one_line(r, 100)))
                    .unwrap_or_default();
                outln!("  {}  rests in {}{why}", e.job, paint(e.state));
            }
        }
        if lost.is_none() && e.state == JobState::InterventionRequired {
            stuck += 1;
        }
    }
    // Steps ran: 0, even when a runner lost a job (a human canceled it: that is news, not
    // a failure of this command). A step that could not go on is one; a stop is 130, as a
    // session's pause is. `job step` asked for one step: one that left its job needing a
    // human (INTERVENTION_REQUIRED: the worktree could not be made, the session failed) is one
    // too, so a script stops there; `job run` serves the whole queue, where such a job is news
    // for the board, not a failure of the run.
    Ok(if failed > 0 {
        exit::FAILED
    } else if paused > 0 {
        exit::INTERRUPTED
    } else if one && stuck > 0 {
        exit::FAILED
    } else {
        exit::OK
    })
}
