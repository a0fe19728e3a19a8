//! Fencing a process group recorded by an earlier oneshot.

use std::time::Duration;

use oneshot::executor::{
    CommandTemplate, FenceOutcome, Invocation, ProcessIdentity, Role, fence, group_alive,
    kill_group,
};

fn sleeper(dir: &std::path::Path) -> Invocation {
    Invocation {
        role: Role::Worker,
        command: CommandTemplate::parse("sh -c 'sleep 30 & exec sleep 30'").unwrap(),
        prompt: String::new(),
        // Unique: a run's end sweeps every process carrying its session's mark, and the tests
        // run side by side.
        session_id: uuid::Uuid::new_v4().to_string(),
        iteration: 1,
        workdir: dir.to_path_buf(),
        env: Vec::new(),
        stdin: oneshot::executor::StdinMode::Prompt,
        confine: None,
        gateway: None,
        base_env: None,
        limits: Default::default(),
    }
}

async fn wait_gone(pgid: i32) -> bool {
    for _ in 0..50 {
        if !group_alive(pgid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn fence_kills_a_live_recorded_group() {
    let dir = tempfile::tempdir().unwrap();
    let running = sleeper(dir.path()).spawn().unwrap();
    // As if read back from oneshot.json after a crash.
    let json = serde_json::to_string(&running.identity()).unwrap();
    let recorded: ProcessIdentity = serde_json::from_str(&json).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let outcome = fence(&recorded, Duration::from_millis(200)).await.unwrap();
    assert_eq!(
        outcome,
        FenceOutcome::Killed {
            pgid: recorded.pgid
        }
    );
    assert!(wait_gone(recorded.pgid).await);
    assert_eq!(
        fence(&recorded, Duration::from_millis(200)).await.unwrap(),
        FenceOutcome::AlreadyGone
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn fence_refuses_a_group_whose_start_time_differs() {
    let dir = tempfile::tempdir().unwrap();
    let running = sleeper(dir.path()).spawn().unwrap();
    let mut recorded = running.identity();
    // The pid now "belongs" to another process than the one recorded.
    recorded.start_time = recorded.start_time.map(|t| t + 1);
    let outcome = fence(&recorded, Duration::from_millis(100)).await.unwrap();
    assert_eq!(outcome, FenceOutcome::AlreadyGone);
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        group_alive(recorded.pgid),
        "a mismatched group must not be touched"
    );
    drop(running);
    assert!(wait_gone(recorded.pgid).await);
}

/// The forgery: a record without a start time, or one naming a group its pid does not
/// lead, must never make a resume signal whatever group it names.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn fence_refuses_a_record_it_cannot_prove_is_ours() {
    let dir = tempfile::tempdir().unwrap();
    let running = sleeper(dir.path()).spawn().unwrap();
    let real = running.identity();
    let no_start = oneshot::executor::ProcessIdentity {
        start_time: None,
        ..real
    };
    let other_leader = oneshot::executor::ProcessIdentity {
        pid: real.pid + 1,
        ..real
    };
    for forged in [no_start, other_leader] {
        let outcome = fence(&forged, Duration::from_millis(100)).await.unwrap();
        assert_eq!(outcome, FenceOutcome::AlreadyGone, "{forged:?}");
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        group_alive(real.pgid),
        "an unproven group must not be touched"
    );
    drop(running);
    assert!(wait_gone(real.pgid).await);
}

#[tokio::test]
async fn fence_and_kill_group_stop_every_member() {
    let dir = tempfile::tempdir().unwrap();
    let a = sleeper(dir.path()).spawn().unwrap();
    let b = sleeper(dir.path()).spawn().unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let outcome = fence(&a.identity(), Duration::from_millis(200))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        FenceOutcome::Killed {
            pgid: a.identity().pgid
        }
    );
    assert!(wait_gone(a.identity().pgid).await);
    kill_group(b.identity().pgid);
    assert!(wait_gone(b.identity().pgid).await);
}
