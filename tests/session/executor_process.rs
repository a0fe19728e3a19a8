//! The executor against real processes and real signals: spawning, the supervising task, its
//! stop and kill, and nothing outliving it.

use std::path::Path;
use std::time::{Duration, Instant};

use oneshot::executor::{
    CommandTemplate, Control, ExecError, Invocation, ProcessEvent, Role, Supervised, group_alive,
};
use oneshot::pipeline::Stream;

/// What a supervised run produced.
#[derive(Debug, Default)]
struct Ran {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    signal: Option<i32>,
    took: Duration,
}

/// Drains a supervised process to its end; `on_stdout` sees the stdout so far after each chunk
/// and may send control messages.
async fn finish(mut s: Supervised, mut on_stdout: impl FnMut(&str, &Supervised)) -> Ran {
    let start = Instant::now();
    let mut ran = Ran::default();
    while let Some(ev) = s.events.recv().await {
        match ev {
            ProcessEvent::Output(Stream::Stdout, b) => {
                ran.stdout.push_str(&String::from_utf8_lossy(&b));
                on_stdout(&ran.stdout, &s);
            }
            ProcessEvent::Output(Stream::Stderr, b) => {
                ran.stderr.push_str(&String::from_utf8_lossy(&b))
            }
            ProcessEvent::Exited { code, signal } => {
                ran.code = code;
                ran.signal = signal;
            }
            ProcessEvent::LimitReached(words) => ran.stderr.push_str(&words),
        }
    }
    ran.took = start.elapsed();
    ran
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
        // Unique: a run's end sweeps every process carrying its session's mark, and the tests
        // run side by side.
        session_id: format!("s-{}", uuid::Uuid::new_v4().simple()),
        iteration: 3,
        workdir: workdir.to_path_buf(),
        env: vec![("EXTRA_VAR".into(), "extra".into())],
        stdin: oneshot::executor::StdinMode::Prompt,
        confine: None,
        gateway: None,
        base_env: None,
        limits: Default::default(),
    }
}

async fn run(inv: &Invocation) -> (Ran, i32) {
    let running = inv.spawn().expect("spawn");
    let pgid = running.identity().pgid;
    (finish(running.supervise(), |_, _| {}).await, pgid)
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
    let inv = invocation(script, dir.path());
    let (ran, _) = run(&inv).await;
    let out = &ran.stdout;
    let prompt = "fix the 'bug' in $HOME";
    assert!(out.contains(&format!("stdin={prompt}\n")), "{out}");
    assert!(out.contains(&format!("env={prompt}\n")), "{out}");
    assert!(out.contains(&format!("arg={prompt}\n")), "{out}");
    let want = format!("ids={} 3 worker extra\n", inv.session_id);
    assert!(out.contains(&want), "{out}");
    let cwd = dir.path().canonicalize().unwrap();
    assert!(out.contains(&format!("cwd={}\n", cwd.display())), "{out}");
    assert_eq!(ran.stderr, "oops\n");
    assert_eq!((ran.code, ran.signal), (Some(3), None));
}

#[tokio::test]
async fn clean_exit_and_a_child_that_ignores_stdin_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let mut inv = invocation("echo hi", dir.path());
    inv.role = Role::Auditor;
    // Far larger than a pipe buffer: the writer must not block the run or fail it.
    inv.prompt = "x".repeat(100_000);
    let (ran, _) = run(&inv).await;
    assert_eq!((ran.code, ran.signal), (Some(0), None));
    assert_eq!(ran.stdout, "hi\n");
}

#[tokio::test]
async fn death_by_signal_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (ran, _) = run(&invocation("kill -USR1 $$", dir.path())).await;
    assert_eq!(ran.code, None);
    assert_eq!(ran.signal, Some(libc::SIGUSR1));
}

#[tokio::test]
async fn a_stop_sends_sigterm_to_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let script = "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done";
    let running = invocation(script, dir.path()).spawn().unwrap();
    let pgid = running.identity().pgid;
    let mut sent = false;
    let ran = finish(running.supervise(), |out, s| {
        if out.contains("ready") && !sent {
            sent = true;
            s.control(Control::Stop(Duration::from_secs(20)));
        }
    })
    .await;
    assert_eq!(ran.code, Some(7), "{ran:?}");
    assert!(ran.stdout.contains("got-term"), "{}", ran.stdout);
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn a_stop_kills_after_the_grace_period_a_group_that_ignores_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let script = "trap '' TERM; echo ready; while :; do sleep 0.05; done";
    let running = invocation(script, dir.path()).spawn().unwrap();
    let pgid = running.identity().pgid;
    let mut sent = false;
    let ran = finish(running.supervise(), |out, s| {
        if out.contains("ready") && !sent {
            sent = true;
            s.control(Control::Stop(Duration::from_millis(300)));
        }
    })
    .await;
    assert_eq!(ran.signal, Some(libc::SIGKILL), "{ran:?}");
    assert!(ran.took < Duration::from_secs(3), "{ran:?}");
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn a_kill_during_a_long_grace_period_kills_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let script = "trap '' TERM; sleep 30 & echo ready; while :; do sleep 0.05; done";
    let running = invocation(script, dir.path()).spawn().unwrap();
    let pgid = running.identity().pgid;
    let mut sent = false;
    let ran = finish(running.supervise(), |out, s| {
        if out.contains("ready") && !sent {
            sent = true;
            s.control(Control::Stop(Duration::from_secs(60)));
            s.control(Control::Kill);
        }
    })
    .await;
    assert_eq!(ran.signal, Some(libc::SIGKILL));
    assert!(ran.took < Duration::from_secs(3), "{ran:?}");
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn dropping_the_handle_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let running = invocation("sleep 30 & echo started; sleep 30", dir.path())
        .spawn()
        .unwrap();
    let pgid = running.identity().pgid;
    let mut s = running.supervise();
    // Let the shell start its background child, then abandon the run.
    match s.events.recv().await {
        Some(ProcessEvent::Output(_, b)) => {
            assert!(String::from_utf8_lossy(&b).contains("started"))
        }
        other => panic!("{other:?}"),
    }
    assert!(group_alive(pgid));
    drop(s);
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn a_grandchild_holding_stdout_does_not_hang_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (ran, pgid) = run(&invocation("sleep 30 & echo done", dir.path())).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert!(ran.took < Duration::from_secs(2), "{ran:?}");
    assert_eq!(ran.stdout, "done\n");
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
            .starts_with("find auditor command 'no-such-oneshot-agent': no such file")
    );
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

/// A process the agent started outside its group (`setsid`, as a dev server or Claude Code's
/// Bash tool would) does not outlive the run: it carries the session's mark and is swept.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_process_that_left_the_group_is_swept_when_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    let script = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 300' < /dev/null > /dev/null 2>&1 &\nsleep 0.3\necho done",
        pidfile.display()
    );
    let mut inv = invocation(&script, dir.path());
    inv.session_id = format!("sweep-test-{}", std::process::id());
    let (ran, _) = run(&inv).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Gone, or a zombie nobody reaps (a container's PID 1 may not): not running either way.
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    });
    assert!(gone, "the escaped process {pid} outlived the run");
}

/// A script that starts a process which leaves the group AND clears its environment (so the
/// session's mark cannot find it): only the reaper, its subreaper ancestor, can. It writes its
/// pid to `pidfile`, then the script goes on with `rest`.
#[cfg(target_os = "linux")]
fn escaping(pidfile: &Path, rest: &str) -> String {
    format!(
        "env -i setsid sh -c 'echo $$ > {p}.tmp; mv {p}.tmp {p}; exec sleep 300' < /dev/null > /dev/null 2>&1 &\n\
         while [ ! -s {p} ]; do sleep 0.01; done\n{rest}",
        p = pidfile.display()
    )
}

/// Waits up to two seconds for `pid` to stop running (gone, or a zombie nobody reaps).
#[cfg(target_os = "linux")]
async fn assert_stops(pidfile: &Path) {
    let pid: i32 = std::fs::read_to_string(pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let running = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    let start = Instant::now();
    while running() && start.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if running() {
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("process {pid} (own session, empty environment) outlived the run");
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_process_that_left_the_group_and_cleared_its_environment_ends_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    let (ran, pgid) = run(&invocation(&escaping(&pidfile, "exit 4"), dir.path())).await;
    // The agent's own status comes through the reaper unchanged.
    assert_eq!((ran.code, ran.signal), (Some(4), None), "{ran:?}");
    assert_stops(&pidfile).await;
    assert_group_gone(pgid).await;
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_kill_reaches_what_left_the_group_and_reports_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    let running = invocation(&escaping(&pidfile, "echo ready; sleep 30"), dir.path())
        .spawn()
        .unwrap();
    let ran = finish(running.supervise(), |out, s| {
        if out.contains("ready") {
            s.control(Control::Kill);
        }
    })
    .await;
    assert_eq!(ran.signal, Some(libc::SIGKILL), "{ran:?}");
    assert!(ran.took < Duration::from_secs(2), "{ran:?}");
    assert_stops(&pidfile).await;
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_handle_reaches_what_left_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    let running = invocation(&escaping(&pidfile, "echo ready; sleep 30"), dir.path())
        .spawn()
        .unwrap();
    let mut s = running.supervise();
    let _ = s.events.recv().await;
    drop(s);
    assert_stops(&pidfile).await;
}

/// oneshot dying without a destructor (the spawning thread ends here; `kill -9` in
/// `tests/session/orphans.rs`): the reaper's parent-death signal makes it kill the whole tree.
#[cfg(target_os = "linux")]
#[test]
fn what_left_the_group_dies_with_the_thread_that_spawned_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    let inv = invocation(&escaping(&pidfile, "sleep 30"), dir.path());
    let pf = pidfile.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let running = inv.spawn().unwrap();
            while !pf.exists() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            std::mem::forget(running);
        })
    })
    .join()
    .unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(assert_stops(&pidfile));
}
