//! `oneshot say JOB MESSAGE`: a human's message to a job's worker, whichever runner — on
//! whichever machine — holds the job. The library records it in the job's audit trail
//! ([`oneshot::job::say`]); this says where it went and, when a runner holds the job, waits a
//! moment for the journal its session ships back to say how the worker was given it.

use super::say::{SayArgs, told};
use anyhow::{Context, Result};
use oneshot::job::store::{JobStore, StoreLocation};
use oneshot::job::{JobSaid, JobState};
use oneshot::session::short_id as short;
use oneshot::session::{MessageStatus, Said};
use std::path::Path;
use std::time::{Duration, Instant};

/// The least time between two reads of the job's journals while waiting.
const GAP: Duration = Duration::from_millis(200);

/// Where `say` finds the job store, should the id be no session's.
pub struct Jobs<'a> {
    /// `--store`.
    pub flag: Option<String>,
    /// The config files (`store = …`).
    pub files: &'a super::config::Files,
    /// The state directory (`<state dir>/jobs.db` by default).
    pub state_dir: &'a Path,
}

/// Says `text` to job `args.id`; `no_session` is why it was not a session's id, said too when
/// it is no job's either.
pub fn say(
    args: &SayArgs,
    text: &str,
    jobs: Jobs<'_>,
    no_session: oneshot::store::StoreError,
) -> Result<i32> {
    let (location, _) = super::store::location(jobs.flag.as_deref(), jobs.files, jobs.state_dir)?;
    let neither = |store: &str| {
        super::exit::usage(format!(
            "say to {id}: no session has this id or prefix ({no_session}), and no job in the \
             job store {store} does; `oneshot list` shows the sessions, `oneshot job list` the \
             jobs (give --store for another job store)",
            id = args.id
        ))
    };
    // A store file that is not there holds no job, and is not made by a mistyped id.
    if let StoreLocation::File(path) = &location
        && !path.exists()
    {
        return Err(neither(&location.to_string()));
    }
    let store = oneshot::job::store::open(&location).context("open the job store")?;
    let actor = oneshot::job::verbs::actor();
    let said = match oneshot::job::say(store.as_ref(), &args.id, text, args.now, &actor) {
        Ok(said) => said,
        Err(oneshot::job::JobSayError::Store {
            source: oneshot::job::JobStoreError::NotFound { .. },
            ..
        }) => return Err(neither(&location.to_string())),
        Err(e) => return Err(e.into()),
    };
    let (job, which) = (&said.job, short(&said.said.id));
    let Some(runner) = &said.runner else {
        outln!(
            "said to job {job} (message {which}): recorded in its audit trail; no runner holds \
             it — the first worker prompt of its next session carries the message{}",
            until(&said)
        );
        return Ok(super::exit::OK);
    };
    outln!(
        "said to job {job} (message {which}): recorded in its audit trail; runner {runner} \
         holds it and delivers it to its worker"
    );
    match wait_for(store.as_ref(), job, &said.said, args.wait) {
        Some((session, m)) => outln!(
            "{}",
            told(&format!("job {job} (session {session})"), &session, &m)
        ),
        None => outln!(
            "said to job {job}: its session has not taken message {which} in yet (waited {}) \
             — `oneshot job log {job}` shows it when it does",
            humantime::format_duration(args.wait)
        ),
    }
    Ok(super::exit::OK)
}

/// When a job nobody holds runs next, for a job that waits for something first.
fn until(said: &JobSaid) -> String {
    let (job, state) = (&said.job, said.state);
    match state {
        JobState::Draft => format!(" (it is DRAFT: `oneshot job activate {job}` lets it run)"),
        JobState::Suspended => format!(" (it is SUSPENDED: `oneshot job resume {job}`)"),
        JobState::ApprovalRequired => {
            format!(" (it is {state}: a `oneshot job reject {job} --feedback …` runs it again)")
        }
        JobState::InterventionRequired => {
            format!(" (it is {state}: `oneshot job resubmit {job}` runs it again)")
        }
        _ => String::new(),
    }
}

/// Waits until a session of job `job` holds the message as handed on (sent and taken in, or
/// kept for a prompt), as the journals its runner ships say; after `wait`, where it stands
/// (`None`: no session holds it handed on yet).
fn wait_for(
    store: &dyn JobStore,
    job: &str,
    said: &Said,
    wait: Duration,
) -> Option<(String, Said)> {
    let deadline = Instant::now() + wait;
    let mut seen = None;
    let mut since = store.change_seen();
    loop {
        let journals = store.journals(job).unwrap_or_default();
        for (session, m) in oneshot::job::sessions_holding(&journals, &said.id) {
            match m.status {
                MessageStatus::Received => {}
                MessageStatus::Sent => seen = Some((session, m)),
                _ => return Some((session, m)),
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return seen;
        }
        // A change wakes it; a store that cannot tell is read again within the second. A
        // running session changes the store many times a second: its journals (whole state
        // files) are read at most every [`GAP`].
        std::thread::sleep(GAP.min(left));
        store.wait_for_change(since, left.min(Duration::from_secs(1)));
        since = store.change_seen();
    }
}
