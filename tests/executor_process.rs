//! The executor against real processes and real signals.

use std::path::Path;
use std::time::Duration;

use oneshot::executor::{
    CommandTemplate, ExecError, Invocation, OutputSink, Role, RunOutcome, StopReason, group_alive,
};
use oneshot::pipeline::Stream;
use tokio::sync::watch;

/// Collects output; optionally bumps the interrupt counter once `trigger` appears on stdout.
#[derive(Default)]
struct Collect {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    ticks: u32,
    on_ready: Option<(watch::Sender<u32>, bool)>,
}

impl OutputSink for Collect {
    fn output(&mut self, stream: Stream, bytes: &[u8]) {
        match stream {
            Stream::Stdout => self.stdout.extend_from_slice(bytes),
            Stream::Stderr => self.stderr.extend_from_slice(bytes),
        }
        if let Some((tx, then_kill)) = &self.on_ready
            && String::from_utf8_lossy(&self.stdout).contains("ready")
        {
            let (tx, then_kill) = (tx.clone(), *then_kill);
            self.on_ready = None;
            tx.send_replace(1);
            if then_kill {
                // A second Ctrl-C a moment after the first, while the group ignores SIGTERM.
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    tx.send_replace(2);
                });
            }
        }
    }

    fn tick(&mut self, _idle: Duration) {
        self.ticks += 1;
    }
}

impl Collect {
    fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// `sh -c SCRIPT sh {prompt}`: the script sees the prompt as `$1`.
fn invocation(script: &str, workdir: &Path) -> Invocation {
    Invocation {
        role: Role::Worker,
        command: CommandTemplate::from_argv(
            ["sh", "-c", script, "sh", "{prompt}"]
                .map(String::from)
                .to_vec(),
        )
        .unwrap(),
        prompt: "fix the 'bug' in $HOME".into(),
        session_id: "s-123".into(),
        iteration: 3,
        workdir: workdir.to_path_buf(),
        env: vec![("EXTRA_VAR".into(), "extra".into())],
        inactivity_timeout: Duration::from_secs(5),
        wall_timeout: None,
        grace: Duration::from_millis(500),
    }
}

async fn run(inv: &Invocation, sink: &mut Collect) -> (RunOutcome, i32) {
    let (_tx, mut rx) = watch::channel(0);
    let mut running = inv.spawn().expect("spawn");
    let pgid = running.identity().pgid;
    (running.drive(sink, &mut rx).await, pgid)
}

/// `killpg(pgid, 0)` also sees zombies, and a container's PID 1 may never reap orphans, so
/// "gone" means no live member (see `group_alive`). Polls briefly for the kernel to finish.
async fn assert_group_gone(pgid: i32) {
    for _ in 0..50 {
        if !group_alive(pgid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("process group {pgid} still has live members");
}

#[tokio::test]
async fn prompt_arrives_on_stdin_env_and_argv_with_oneshot_env() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"in=$(cat)
printf 'stdin=%s\n' "$in"
printf 'env=%s\n' "$ONESHOT_PROMPT"
printf 'arg=%s\n' "$1"
printf 'ids=%s %s %s %s\n' "$ONESHOT_SESSION_ID" "$ONESHOT_ITERATION" "$ONESHOT_ROLE" "$EXTRA_VAR"
printf 'cwd=%s\n' "$(pwd -P)"
echo oops >&2
exit 3"#;
    let mut sink = Collect::default();
    let (outcome, _) = run(&invocation(script, dir.path()), &mut sink).await;
    let out = sink.out();
    let prompt = "fix the 'bug' in $HOME";
    assert!(out.contains(&format!("stdin={prompt}\n")), "{out}");
    assert!(out.contains(&format!("env={prompt}\n")), "{out}");
    assert!(out.contains(&format!("arg={prompt}\n")), "{out}");
    assert!(out.contains("ids=s-123 3 worker extra\n"), "{out}");
    let cwd = dir.path().canonicalize().unwrap();
    assert!(out.contains(&format!("cwd={}\n", cwd.display())), "{out}");
    assert_eq!(sink.stderr, b"oops\n");
    assert_eq!(
        (outcome.exit_code, outcome.signal, outcome.stop),
        (Some(3), None, None)
    );
    assert!(!outcome.success());
    assert_eq!(outcome.reason(), StopReason::ExitCode);
}

#[tokio::test]
async fn clean_exit_is_success_and_a_child_that_ignores_stdin_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let mut inv = invocation("echo hi", dir.path());
    inv.role = Role::Auditor;
    // Far larger than a pipe buffer: the writer must not block the run or fail it.
    inv.prompt = "x".repeat(100_000);
    let mut sink = Collect::default();
    let (outcome, _) = run(&inv, &mut sink).await;
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(sink.out(), "hi\n");
}

#[tokio::test]
async fn death_by_signal_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = Collect::default();
    let (outcome, _) = run(&invocation("kill -USR1 $$", dir.path()), &mut sink).await;
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.signal, Some(libc::SIGUSR1));
    assert_eq!(outcome.stop, None);
    assert_eq!(outcome.reason(), StopReason::ExitCode);
}

#[tokio::test]
async fn inactivity_timeout_kills_a_silent_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut inv = invocation("exec sleep 30", dir.path());
    inv.inactivity_timeout = Duration::from_millis(300);
    let mut sink = Collect::default();
    let (outcome, pgid) = run(&inv, &mut sink).await;
    assert_eq!(outcome.stop, Some(StopReason::InactivityTimeout));
    assert_eq!(outcome.signal, Some(libc::SIGTERM));
    assert!(outcome.duration < Duration::from_secs(2), "{outcome:?}");
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn inactivity_timeout_kills_grandchildren_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut inv = invocation("sleep 30 & sleep 30", dir.path());
    inv.inactivity_timeout = Duration::from_millis(300);
    let mut sink = Collect::default();
    let (outcome, pgid) = run(&inv, &mut sink).await;
    assert_eq!(outcome.stop, Some(StopReason::InactivityTimeout));
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn output_on_either_pipe_resets_the_inactivity_timer() {
    let dir = tempfile::tempdir().unwrap();
    let script = "for i in 1 2 3; do echo $i; sleep 0.15; echo e$i >&2; sleep 0.15; done";
    let mut inv = invocation(script, dir.path());
    inv.inactivity_timeout = Duration::from_millis(400);
    let mut sink = Collect::default();
    let (outcome, _) = run(&inv, &mut sink).await;
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(sink.out(), "1\n2\n3\n");
    assert_eq!(sink.stderr, b"e1\ne2\ne3\n");
}

#[tokio::test]
async fn wall_timeout_stops_a_chatty_process_and_ticks_run_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let mut inv = invocation("while :; do echo x; sleep 0.05; done", dir.path());
    inv.wall_timeout = Some(Duration::from_millis(1200));
    let mut sink = Collect::default();
    let (outcome, pgid) = run(&inv, &mut sink).await;
    assert_eq!(outcome.stop, Some(StopReason::WorkerTimeout));
    assert!(outcome.duration < Duration::from_secs(3), "{outcome:?}");
    assert!(sink.ticks >= 1, "tick was never called");
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn first_interrupt_sends_sigterm_to_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let script = "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done";
    let inv = invocation(script, dir.path());
    let (tx, mut rx) = watch::channel(0);
    let mut sink = Collect {
        on_ready: Some((tx, false)),
        ..Collect::default()
    };
    let mut running = inv.spawn().unwrap();
    let outcome = running.drive(&mut sink, &mut rx).await;
    assert_eq!(outcome.stop, Some(StopReason::Interrupted));
    assert_eq!(outcome.exit_code, Some(7), "{outcome:?}");
    assert!(sink.out().contains("got-term"), "{}", sink.out());
}

#[tokio::test]
async fn second_interrupt_kills_a_group_that_ignores_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let script = "trap '' TERM; echo ready; while :; do sleep 0.05; done";
    let mut inv = invocation(script, dir.path());
    inv.grace = Duration::from_secs(20);
    let (tx, mut rx) = watch::channel(0);
    let mut sink = Collect {
        on_ready: Some((tx, true)),
        ..Collect::default()
    };
    let mut running = inv.spawn().unwrap();
    let pgid = running.identity().pgid;
    let outcome = running.drive(&mut sink, &mut rx).await;
    assert_eq!(outcome.stop, Some(StopReason::Interrupted));
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    assert!(outcome.duration < Duration::from_secs(3), "{outcome:?}");
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn an_interrupt_pending_before_drive_stops_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_tx, mut rx) = watch::channel(1);
    let mut running = invocation("exec sleep 30", dir.path()).spawn().unwrap();
    let outcome = running.drive(&mut Collect::default(), &mut rx).await;
    assert_eq!(outcome.stop, Some(StopReason::Interrupted));
    assert!(outcome.duration < Duration::from_secs(2), "{outcome:?}");
}

#[tokio::test]
async fn dropping_running_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut running = invocation("sleep 30 & echo started; sleep 30", dir.path())
        .spawn()
        .unwrap();
    let pgid = running.identity().pgid;
    let (_tx, mut rx) = watch::channel(0);
    let mut sink = Collect::default();
    // Let the shell start its background child, then abandon the run mid-drive.
    let cut = tokio::time::timeout(
        Duration::from_millis(300),
        running.drive(&mut sink, &mut rx),
    );
    assert!(cut.await.is_err(), "drive should still be running");
    assert!(sink.out().contains("started"));
    assert!(group_alive(pgid));
    drop(running);
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn grandchild_holding_stdout_does_not_hang_drive() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = Collect::default();
    let (outcome, pgid) = run(&invocation("sleep 30 & echo done", dir.path()), &mut sink).await;
    assert!(outcome.success(), "{outcome:?}");
    assert!(outcome.duration < Duration::from_secs(2), "{outcome:?}");
    assert_eq!(sink.out(), "done\n");
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn identity_records_pid_group_and_start_time() {
    let dir = tempfile::tempdir().unwrap();
    let running = invocation("exec sleep 30", dir.path()).spawn().unwrap();
    let id = running.identity();
    assert_eq!(id.pid, id.pgid);
    #[cfg(target_os = "linux")]
    assert!(id.start_time.is_some());
    let json = serde_json::to_string(&id).unwrap();
    assert_eq!(
        serde_json::from_str::<oneshot::executor::ProcessIdentity>(&json).unwrap(),
        id
    );
}

#[tokio::test]
async fn missing_program_fails_to_spawn_naming_the_role() {
    let dir = tempfile::tempdir().unwrap();
    let mut inv = invocation("true", dir.path());
    inv.role = Role::Auditor;
    inv.command = CommandTemplate::parse("no-such-oneshot-agent {prompt}").unwrap();
    let err = inv.spawn().unwrap_err();
    assert!(matches!(err, ExecError::NotFound { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("auditor command 'no-such-oneshot-agent' not found")
    );
    assert!(inv.check().is_err());
}

#[tokio::test]
async fn drive_twice_returns_the_same_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let (_tx, mut rx) = watch::channel(0);
    let mut running = invocation("exit 4", dir.path()).spawn().unwrap();
    let first = running.drive(&mut Collect::default(), &mut rx).await;
    let (_tx, mut rx) = watch::channel(2);
    let second = running.drive(&mut Collect::default(), &mut rx).await;
    assert_eq!(first, second);
    assert_eq!(first.exit_code, Some(4));
}

/// PR_SET_PDEATHSIG fires when the spawning *thread* exits, even if nothing is dropped.
#[cfg(target_os = "linux")]
#[test]
fn child_dies_with_the_thread_that_spawned_it() {
    let dir = tempfile::tempdir().unwrap();
    let inv = invocation("exec sleep 30", dir.path());
    let pgid = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let running = inv.spawn().unwrap();
            let pgid = running.identity().pgid;
            // Skip Drop: only the parent-death signal can stop it now.
            std::mem::forget(running);
            pgid
        })
    })
    .join()
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(assert_group_gone(pgid));
}
