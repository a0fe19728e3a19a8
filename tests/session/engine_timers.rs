//! The engine loop's timers on paused tokio time: a ten-minute inactivity timeout or an
//! hour-long wall-clock limit fires as soon as the runtime has nothing else to do, so these
//! tests are about the timer logic, not about waiting. The processes are real.

use oneshot::session::Session;
use oneshot::{Policy, SessionBuilder, SessionState, Store};
use std::time::{Duration, Instant};

fn policy(limits: &str) -> Policy {
    let source =
        format!("return {{ limits = {{ max_iterations = 1, grace_period = '1s', {limits} }} }}");
    Policy::from_source("timers.lua", &source, Default::default()).unwrap()
}

async fn run(limits: &str, worker: &str, auditor: &str) -> (Session, Duration) {
    run_observed(limits, worker, auditor, &mut oneshot::engine::Silent).await
}

/// Pauses tokio's clock at a moment of the run. On a paused clock an idle runtime jumps to its
/// next timer, while a real process takes real time to start, print and exit: what must happen
/// before a timer fires (a worker's normal exit, its first line) happens on the real clock.
enum PauseAt {
    /// When the session enters this state.
    State(SessionState),
    /// At the first line of output.
    FirstOutput,
    /// Done: the clock is paused.
    Paused,
}

impl oneshot::engine::Observer for PauseAt {
    fn update(&mut self, update: oneshot::engine::Update) {
        let now = match (&*self, &update) {
            (PauseAt::State(at), oneshot::engine::Update::Transition { to, .. }) => to == at,
            (PauseAt::FirstOutput, oneshot::engine::Update::Output { .. }) => true,
            _ => false,
        };
        if now {
            tokio::time::pause();
            *self = PauseAt::Paused;
        }
    }

    fn wants_output(&self) -> bool {
        matches!(self, PauseAt::FirstOutput)
    }
}

async fn run_observed(
    limits: &str,
    worker: &str,
    auditor: &str,
    observer: &mut dyn oneshot::engine::Observer,
) -> (Session, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("state"));
    let mut engine = SessionBuilder::new("t")
        .worker(worker)
        .auditor(auditor)
        .workdir(dir.path())
        .policy(policy(limits))
        .create(&store)
        .unwrap();
    let real = Instant::now();
    engine.run(observer).await.unwrap();
    (engine.session().clone(), real.elapsed())
}

fn reason_of(s: &Session, state: SessionState) -> String {
    s.history
        .iter()
        .rev()
        .find(|h| h.state == state)
        .and_then(|h| h.reason.as_ref())
        .map(|r| r.code().to_string())
        .unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn a_ten_minute_inactivity_timeout_fires_without_waiting_ten_minutes() {
    let (s, real) = run(
        "inactivity_timeout = '10m'",
        "sh -c 'echo started; exec sleep 3600'",
        "echo 'VERDICT: DONE'",
    )
    .await;
    assert_eq!(s.state(), SessionState::Failed, "{:?}", s.history);
    assert_eq!(
        reason_of(&s, SessionState::RecoveryPending),
        "inactivity_timeout"
    );
    assert!(real < Duration::from_secs(30), "{real:?}");
}

// The clock stops at the worker's first line (see `PauseAt`).
#[tokio::test]
async fn output_keeps_resetting_inactivity_but_the_wall_clock_limit_still_ends_the_run() {
    // Prints every 50 real ms: never silent for two hours, but an hour of virtual time passes
    // whenever the runtime waits for the next line.
    let (s, real) = run_observed(
        "inactivity_timeout = '2h', worker_timeout = '1h'",
        "sh -c 'while true; do echo tick; sleep 0.05; done'",
        "echo 'VERDICT: DONE'",
        &mut PauseAt::FirstOutput,
    )
    .await;
    assert_eq!(
        reason_of(&s, SessionState::RecoveryPending),
        "worker_timeout"
    );
    assert!(s.worker_output.contains("tick"));
    assert!(real < Duration::from_secs(30), "{real:?}");
}

// The worker runs on the real clock (see `PauseAt`); the clock stops when the auditor starts.
#[tokio::test]
async fn an_auditor_past_its_wall_clock_limit_fails_the_session() {
    let (s, real) = run_observed(
        "inactivity_timeout = '2h', auditor_timeout = '1h'",
        "echo done",
        "sh -c 'while true; do echo thinking; sleep 0.05; done'",
        &mut PauseAt::State(SessionState::AuditorExecuting),
    )
    .await;
    assert_eq!(s.state(), SessionState::Failed);
    assert_eq!(s.state(), SessionState::Failed, "{:?}", s.history);
    assert!(real < Duration::from_secs(30), "{real:?}");
}
