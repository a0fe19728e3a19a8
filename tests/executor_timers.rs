//! The executor's timers on paused tokio time: a ten-minute inactivity timeout or an hour-long
//! wall-clock limit fires as soon as the runtime has nothing else to do, so these tests are
//! about the timer logic, not about waiting. The processes are still real.

use std::time::{Duration, Instant};

use oneshot::executor::{CommandTemplate, Invocation, OutputSink, Role, StopReason, group_alive};
use oneshot::pipeline::Stream;
use tokio::sync::watch;

#[derive(Default)]
struct Count {
    chunks: usize,
}

impl OutputSink for Count {
    fn output(&mut self, _stream: Stream, _bytes: &[u8]) {
        self.chunks += 1;
    }
}

fn invocation(script: &str, inactivity: Duration, wall: Option<Duration>) -> Invocation {
    Invocation {
        role: Role::Worker,
        command: CommandTemplate::from_argv(["sh", "-c", script].map(String::from).to_vec())
            .unwrap(),
        prompt: String::new(),
        session_id: "timers".into(),
        iteration: 1,
        workdir: std::env::temp_dir(),
        env: Vec::new(),
        inactivity_timeout: inactivity,
        wall_timeout: wall,
        grace: Duration::from_secs(60),
    }
}

#[tokio::test(start_paused = true)]
async fn a_ten_minute_inactivity_timeout_fires_without_waiting_ten_minutes() {
    let inv = invocation("exec sleep 3600", Duration::from_secs(600), None);
    let (_tx, mut rx) = watch::channel(0);
    let real = Instant::now();
    let mut running = inv.spawn().unwrap();
    let pgid = running.identity().pgid;
    let outcome = running.drive(&mut Count::default(), &mut rx).await;
    assert_eq!(outcome.stop, Some(StopReason::InactivityTimeout));
    assert!(outcome.duration >= Duration::from_secs(600), "{outcome:?}");
    assert!(
        real.elapsed() < Duration::from_secs(30),
        "{:?}",
        real.elapsed()
    );
    drop(running);
    for _ in 0..100 {
        if !group_alive(pgid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("group {pgid} survived");
}

#[tokio::test(start_paused = true)]
async fn output_keeps_resetting_inactivity_but_the_wall_clock_limit_still_ends_the_run() {
    // Prints every 50 real ms: never inactive for a minute, but an hour of virtual time passes
    // whenever the runtime waits for the next line.
    let inv = invocation(
        "while true; do echo tick; sleep 0.05; done",
        Duration::from_secs(7200),
        Some(Duration::from_secs(3600)),
    );
    let (_tx, mut rx) = watch::channel(0);
    let real = Instant::now();
    let mut running = inv.spawn().unwrap();
    let mut sink = Count::default();
    let outcome = running.drive(&mut sink, &mut rx).await;
    assert_eq!(outcome.stop, Some(StopReason::WorkerTimeout));
    assert!(outcome.duration >= Duration::from_secs(3600), "{outcome:?}");
    assert!(
        real.elapsed() < Duration::from_secs(30),
        "{:?}",
        real.elapsed()
    );
}
