//! The step's `select!` loop on paused time, with scripted hands and a real SQLite store: a
//! shutdown cuts a backoff short, a lost lease kills the running session, a stop pauses it and
//! hands the lease back, and a judgement is in the store before the move it led to.

use super::drive::step_loop;
use super::hands::Hands;
use super::{Ended, RunnerOptions, Shutdown};
use crate::engine::Interrupt;
use crate::engine::interrupt::Ask;
use crate::job::decision::Judgement;
use crate::job::record::{Job, JobSpec, Workspace};
use crate::job::step::{Found, HarvestFacts, JobJudge, RunnerEvent};
use crate::job::store::{JobStore, SqliteStore};
use crate::job::{JobState, JobTrigger, verbs};
use crate::machine::SessionState;
use crate::policy::{Approval, ApprovalJob, ApprovalResult, ApproveDecision, RetryLimits};
use crate::redact::Redacted;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

/// What the scripted hands saw of the session's interrupter.
#[derive(Debug, Default)]
struct Seen {
    asks: Vec<&'static str>,
}

/// Hands that answer from a script: provisioning fails transiently or succeeds, the session
/// runs until it is told to stop (paused: INTERRUPTED) or killed, or for `runs` of virtual
/// time and then completes.
struct Script {
    provision_fails: bool,
    runs: Duration,
    /// How the session ends when it runs out its time.
    ends: SessionState,
    interrupt: Option<(Interrupt, UnboundedReceiver<Ask>)>,
    seen: Rc<RefCell<Seen>>,
}

impl Script {
    fn new(provision_fails: bool, runs: Duration) -> (Script, Rc<RefCell<Seen>>) {
        let seen = Rc::new(RefCell::new(Seen::default()));
        (
            Script {
                provision_fails,
                runs,
                ends: SessionState::Completed,
                interrupt: None,
                seen: Rc::clone(&seen),
            },
            seen,
        )
    }
}

fn ended(state: SessionState) -> RunnerEvent {
    RunnerEvent::SessionEnded(crate::job::core::core_tests::end(state))
}

impl Hands for Script {
    async fn provision(&mut self, _: &Job) -> RunnerEvent {
        if self.provision_fails {
            return RunnerEvent::ProvisionFailed {
                reason: "the repository is locked".into(),
                transient: true,
            };
        }
        RunnerEvent::Provisioned(Workspace {
            path: "/nowhere".into(),
            branch: None,
            base_commit: None,
            base_branch: None,
        })
    }

    async fn make_session(
        &mut self,
        _: &Job,
        _: &Workspace,
        _: String,
        _: Option<String>,
    ) -> RunnerEvent {
        self.interrupt = Some(Interrupt::channel());
        RunnerEvent::SessionMade {
            session: "s1".into(),
        }
    }

    fn interrupter(&self) -> Option<Interrupt> {
        self.interrupt.as_ref().map(|(i, _)| i.clone())
    }

    async fn run_session(&mut self, _: &str) -> RunnerEvent {
        let Some((_, rx)) = self.interrupt.as_mut() else {
            return ended(SessionState::Failed);
        };
        tokio::select! {
            ask = rx.recv() => {
                let word = match ask {
                    Some(Ask::Stop) => "stop",
                    Some(Ask::Kill) => "kill",
                    None => "gone",
                };
                self.seen.borrow_mut().asks.push(word);
                ended(SessionState::Interrupted)
            }
            _ = tokio::time::sleep(self.runs) => ended(self.ends),
        }
    }

    async fn inspect(&mut self, _: &Job, _: Option<String>) -> RunnerEvent {
        RunnerEvent::Inspected(Found::Nothing)
    }

    async fn read_session(&mut self, _: String) -> RunnerEvent {
        ended(SessionState::Completed)
    }

    async fn harvest(
        &mut self,
        _: Workspace,
        _: Redacted<String>,
        _: Option<crate::job::record::Author>,
    ) -> RunnerEvent {
        RunnerEvent::Harvested(HarvestFacts {
            commit: None,
            diff_hash: "d".into(),
            diff_stat: String::new(),
            files: Vec::new(),
            empty: false,
        })
    }

    async fn audit(&mut self, _: &Job, _: &Workspace, _: &[String]) -> RunnerEvent {
        RunnerEvent::Audited(Vec::new())
    }
}

/// A judge with a long backoff, that hands every result to a human.
struct Slow;

impl JobJudge for Slow {
    fn approve(&mut self, _: &ApprovalResult, _: &ApprovalJob) -> Result<ApproveDecision, String> {
        Ok(ApproveDecision {
            approval: Approval::Human,
            reason: None,
        })
    }
    fn retry(&self) -> RetryLimits {
        RetryLimits {
            attempts: 3,
            initial_delay: Duration::from_secs(600),
            max_delay: Duration::from_secs(600),
            ..RetryLimits::default()
        }
    }
}

/// A judge that retries nothing.
struct NoRetries;

impl JobJudge for NoRetries {
    fn approve(&mut self, _: &ApprovalResult, _: &ApprovalJob) -> Result<ApproveDecision, String> {
        Err("not asked".into())
    }
    fn retry(&self) -> RetryLimits {
        RetryLimits {
            attempts: 0,
            ..RetryLimits::default()
        }
    }
}

/// A store with one PENDING job, claimed by runner `r1` with a 30 s lease.
fn claimed(dir: &tempfile::TempDir) -> (Arc<dyn JobStore>, crate::job::store::Claim) {
    let store: Arc<dyn JobStore> = Arc::new(SqliteStore::open(dir.path().join("jobs.db")).unwrap());
    let spec = JobSpec::new("fix it", dir.path(), "cmd:true", "cmd:true");
    let job = Job::new("job-00000001", spec, JobState::Pending, 1);
    let r = crate::job::redactor(None);
    let audit = verbs::audit_entry(
        &job,
        crate::job::record::AuditAction::Create,
        JobState::Pending,
        &Default::default(),
    );
    store
        .create(&r.seal(&job).unwrap(), &r.seal(&audit).unwrap())
        .unwrap();
    let claim = store.claim("r1", None, 30_000).unwrap().expect("a claim");
    (store, claim)
}

fn opts(dir: &tempfile::TempDir, shutdown: &Shutdown) -> RunnerOptions {
    let mut o = RunnerOptions::new(dir.path());
    o.runner = "r1".into();
    o.shutdown = shutdown.clone();
    o
}

/// A store holding one claimed job, the runner's options and their shutdown switch (the
/// directory lives as long as the tuple).
fn setup() -> (
    tempfile::TempDir,
    Arc<dyn JobStore>,
    crate::job::store::Claim,
    Shutdown,
    RunnerOptions,
) {
    let dir = tempfile::tempdir().unwrap();
    let (store, claim) = claimed(&dir);
    let shutdown = Shutdown::new();
    let o = opts(&dir, &shutdown);
    (dir, store, claim, shutdown, o)
}

/// Runs `f` on a paused current-thread runtime inside a local set, as the runner runs.
fn paused<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

#[test]
fn a_shutdown_cuts_a_backoff_short_and_hands_the_lease_back() {
    let (_dir, store, claim, shutdown, o) = setup();
    let (mut hands, _) = Script::new(true, Duration::ZERO);
    let (end, waited) = paused(async {
        let start = Instant::now();
        let stopper = shutdown.clone();
        tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            stopper.stop();
        });
        let end = step_loop(Arc::clone(&store), claim, &o, &mut hands, &mut Slow).await;
        (end, start.elapsed())
    });
    assert!(matches!(end.ended, Ended::Paused(_)), "{end:?}");
    assert!(waited < Duration::from_secs(600), "waited {waited:?}");
    assert_eq!(end.state, JobState::Provisioning);
    // Handed back: another runner claims it at once.
    assert!(store.claim("r2", None, 30_000).unwrap().is_some());
    // The retry was judged and recorded before the wait.
    let d = store.decisions("job-00000001").unwrap();
    assert!(
        matches!(&d[..], [d] if matches!(d.judgement, Judgement::Retry { after_ms: Some(600_000), .. })),
        "{d:?}"
    );
}

#[test]
fn a_lost_lease_kills_the_running_session_and_writes_nothing_more() {
    let (_dir, store, claim, _, o) = setup();
    let (mut hands, seen) = Script::new(false, Duration::from_secs(3600));
    let end = paused(async {
        let s = Arc::clone(&store);
        tokio::task::spawn_local(async move {
            // Mid-session, a human cancels: the lease is revoked.
            tokio::time::sleep(Duration::from_secs(2)).await;
            let giving = verbs::Giving {
                actor: "ana".into(),
                feedback: None,
                now_ms: s.now_ms().unwrap(),
            };
            verbs::give(s.as_ref(), "job-00000001", JobTrigger::Cancel, &giving).unwrap();
        });
        step_loop(Arc::clone(&store), claim, &o, &mut hands, &mut Slow).await
    });
    assert_eq!(seen.borrow().asks, ["kill"]);
    assert_eq!(end.state, JobState::Canceled);
    let lost = match &end.ended {
        Ended::Lost(why) => why.as_str(),
        _ => "",
    };
    assert!(
        lost.contains("canceled by ana while it was EXECUTING"),
        "{end:?}"
    );
    // The killed session's end was not judged: no harvest, no artifact.
    assert!(store.artifacts("job-00000001").unwrap().is_empty());
}

#[test]
fn a_stop_pauses_the_running_session_and_a_clean_run_reaches_a_human() {
    let (_dir, store, claim, shutdown, o) = setup();
    let (mut hands, seen) = Script::new(false, Duration::from_secs(3600));
    let end = paused(async {
        let stopper = shutdown.clone();
        tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_secs(100)).await;
            stopper.stop();
        });
        step_loop(Arc::clone(&store), claim, &o, &mut hands, &mut Slow).await
    });
    assert_eq!(seen.borrow().asks, ["stop"]);
    assert_eq!(end.state, JobState::Executing);
    assert!(
        matches!(&end.ended, Ended::Paused(what) if what.contains("session s1 paused")),
        "{end:?}"
    );
    // Heartbeats kept the lease through 100 s of a 30 s lease; it was handed back at the end.
    assert!(
        store
            .lease("job-00000001")
            .unwrap()
            .is_none_or(|l| l.runner != "r1")
    );

    // The same step, unstopped: the session completes, the harvest is judged (recorded first),
    // and the job waits for a human.
    let (_dir, store, claim, _, o) = setup();
    let (mut hands, _) = Script::new(false, Duration::from_secs(50));
    let end = paused(step_loop(
        Arc::clone(&store),
        claim,
        &o,
        &mut hands,
        &mut Slow,
    ));
    assert_eq!(end.state, JobState::ApprovalRequired, "{end:?}");
    let d = store.decisions("job-00000001").unwrap();
    assert!(
        matches!(&d[..], [d] if d.judgement.hook() == "approve"),
        "{d:?}"
    );
    assert_eq!(store.get("job-00000001").unwrap().session(), Some("s1"));
}

#[test]
fn a_step_that_moves_twice_at_once_journals_each_state_and_keeps_its_lease_to_the_end() {
    // A session that stops short with no retries left: EXECUTING → RECOVERING →
    // INTERVENTION_REQUIRED in one turn of the core. The first save must not put the job to
    // rest (and hand the lease back) before the second is written.
    let (_dir, store, claim, _, o) = setup();
    let (mut hands, _) = Script::new(false, Duration::from_secs(40));
    hands.ends = SessionState::Interrupted;
    let end = paused(step_loop(
        Arc::clone(&store),
        claim,
        &o,
        &mut hands,
        &mut NoRetries,
    ));
    assert_eq!(end.state, JobState::InterventionRequired, "{end:?}");
    assert_eq!(end.ended, Ended::Rested, "{end:?}");
    let moves: Vec<JobState> = store
        .history("job-00000001")
        .unwrap()
        .iter()
        .map(|t| t.to)
        .collect();
    assert_eq!(
        moves[moves.len() - 2..],
        [JobState::Recovering, JobState::InterventionRequired]
    );
    let d = store.decisions("job-00000001").unwrap();
    assert!(
        matches!(&d[..], [d] if matches!(d.judgement, Judgement::Retry { after_ms: None, .. })),
        "{d:?}"
    );
}
