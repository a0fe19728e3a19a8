//! Real processes in real cgroups (this machine: root with cgroup v1; elsewhere cgroup v2
//! delegated). Where no cgroup can be made the cgroup tests say why and return.

use super::place::{dir_in, mounts, own_path};
use super::*;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const MIB: u64 = 1 << 20;

#[test]
fn sizes_parse_as_people_write_them() {
    assert_eq!(parse_size("2G").unwrap(), 2 << 30);
    assert_eq!(parse_size("512M").unwrap(), 512 << 20);
    assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
    assert_eq!(parse_size("2048").unwrap(), 2048);
    assert_eq!(parse_size("10T").unwrap(), 10 << 40);
    assert_eq!(parse_size(" 2 gb ").unwrap(), 2 << 30);
    assert_eq!(parse_size("100MiB").unwrap(), 100 << 20);
    assert_eq!(parse_size("0.5k").unwrap(), 512);
    assert_eq!(parse_size("7B").unwrap(), 7);
    for bad in [
        "",
        "G",
        "2X",
        "1.5",
        "-1G",
        "1.2.3M",
        "99999999999P",
        "2 G B",
    ] {
        assert!(parse_size(bad).is_err(), "{bad:?} parsed");
    }
}

#[test]
fn sizes_are_said_in_the_largest_unit() {
    assert_eq!(format_size(2 << 30), "2 GiB");
    assert_eq!(format_size(3 << 29), "1.5 GiB");
    assert_eq!(format_size(300 << 20), "300 MiB");
    assert_eq!(format_size(512), "512 B");
    assert_eq!(format_size(1024), "1 KiB");
    for s in ["2G", "1.5G", "100M", "10T"] {
        assert_eq!(
            parse_size(&format_size(parse_size(s).unwrap())).unwrap(),
            parse_size(s).unwrap()
        );
    }
}

#[test]
fn the_reason_names_the_process() {
    let e = Exceeded {
        limit: 2 << 30,
        by: Some(ProcUse {
            pid: 1234,
            command: "node".into(),
            bytes: 1,
        }),
        bytes: None,
    };
    assert_eq!(
        e.to_string(),
        "memory limit 2 GiB reached by node (pid 1234)"
    );
    let e = Exceeded { by: None, ..e };
    assert_eq!(
        e.to_string(),
        "memory limit 2 GiB reached by the agent's processes"
    );
    let o = LimitOutcome {
        pids_refused: 3,
        pids_limit: Some(64),
        ..Default::default()
    };
    assert_eq!(
        o.reason().unwrap(),
        "process limit 64 reached by the agent's processes (3 forks refused)"
    );
    assert_eq!(LimitOutcome::default().reason(), None);
}

#[test]
fn cgroup_places_are_read_from_proc() {
    let info = "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
                32 25 0:28 /kube/pod1 /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n\
                33 25 0:29 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n\
                34 25 0:30 / /tmp rw - tmpfs tmpfs rw";
    let m = mounts(info);
    assert_eq!(m.len(), 4);
    let cg = "4:memory:/a/b\n3:cpu,cpuacct:/c\n2:pids:/kube/pod1/x\n0::/user.slice/u.scope";
    assert_eq!(own_path(cg, Some("cpuacct")).as_deref(), Some("/c"));
    assert_eq!(own_path(cg, None).as_deref(), Some("/user.slice/u.scope"));
    assert_eq!(
        dir_in(&m[0], "/a/b").unwrap(),
        std::path::Path::new("/sys/fs/cgroup/memory/a/b")
    );
    assert_eq!(
        dir_in(&m[2], "/kube/pod1/x").unwrap(),
        std::path::Path::new("/sys/fs/cgroup/pids/x")
    );
    assert!(dir_in(&m[2], "/elsewhere").is_none());
    assert!(m[3].v2 && m[1].controllers.contains(&"cpuacct".to_string()));
}

#[test]
fn limits_that_are_not_limits_are_refused() {
    let zero = AgentLimits {
        memory: Some(0),
        ..Default::default()
    };
    assert!(prepare("t", &zero).is_err());
    let cpu = AgentLimits {
        cpu: Some(-1.0),
        ..Default::default()
    };
    assert!(prepare("t", &cpu).is_err());
    assert!(
        prepare(
            "../x",
            &AgentLimits {
                pids: Some(5),
                ..Default::default()
            }
        )
        .is_err()
    );
    let none = prepare("t", &AgentLimits::default()).unwrap();
    assert_eq!(none.kind(), "none");
    assert!(none.join_fds().is_empty() && none.warning().is_none());
}

/// A cgroup for this test, or why none can be made here (the test then returns).
fn cgroup_or_skip(test: &str, limits: AgentLimits) -> Option<Prepared> {
    let name = format!("test-{test}-{}", std::process::id());
    let p = prepare(&name, &limits).expect("limits are valid");
    if !p.kind().starts_with("cgroup") {
        println!("SKIPPED {test}: {}", p.warning().unwrap_or("no cgroup"));
        return None;
    }
    Some(p)
}

/// `sh -c script`, joined to `fds` before exec when given, in a process group of its own.
fn spawn(script: &str, fds: Option<Vec<std::os::fd::RawFd>>) -> Child {
    let mut c = Command::new("sh");
    c.args(["-c", script])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    if let Some(fds) = fds {
        // SAFETY: join_self only writes to the descriptors, which live in the parent.
        unsafe { c.pre_exec(move || join_self(&fds)) };
    }
    c.spawn().expect("sh runs")
}

fn python() -> Option<&'static str> {
    let ok = Command::new("python3")
        .arg("-c")
        .arg("")
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("SKIPPED: no python3 to allocate with");
    }
    ok.then_some("python3")
}

/// Allocates (and touches) `mib` MiB after a moment (so a look sees the process first).
fn hog(mib: u64) -> String {
    format!(
        "python3 -c 'import time; time.sleep(0.7); b = bytearray({mib}*1024*1024); time.sleep(20)'"
    )
}

fn wait(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the child did not end in {within:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
}

#[test]
fn a_process_over_the_memory_limit_is_killed_and_named() {
    let limits = AgentLimits {
        memory: Some(100 * MIB),
        ..Default::default()
    };
    let Some(p) = cgroup_or_skip("memory", limits) else {
        return;
    };
    if python().is_none() {
        return;
    }
    let mut sibling = spawn(&hog(150), None);
    let mut agent = spawn(&format!("{}; exit 3", hog(300)), Some(p.join_fds()));
    let e = p.start(agent.id() as i32);
    let Enforcer::Cgroup(cg) = &e else {
        panic!("a cgroup")
    };
    let dirs = cg.dirs().to_vec();
    assert!(
        cg.pids().contains(&(agent.id() as i32)),
        "the child joined before exec"
    );
    let exceeded = runtime()
        .block_on(async { tokio::time::timeout(Duration::from_secs(15), e.exceeded()).await });
    let exceeded = exceeded.expect("the kill is seen within 15 s");
    let by = exceeded.by.clone().expect("the process is named");
    assert_eq!(by.command, "python3", "{exceeded}");
    assert_eq!(
        exceeded.to_string(),
        format!("memory limit 100 MiB reached by python3 (pid {})", by.pid)
    );
    // The shell saw its python killed and went on to its own exit.
    assert_eq!(wait(&mut agent, Duration::from_secs(10)).code(), Some(3));
    let out = e.outcome();
    assert_eq!(out.memory.as_ref(), Some(&exceeded));
    assert!(
        out.memory_peak
            .is_some_and(|p| p <= 100 * MIB && p > 50 * MIB),
        "{out:?}"
    );
    assert_eq!(out.reason().as_deref(), Some(exceeded.to_string().as_str()));
    // The sibling outside the cgroup holds its 150 MiB on.
    assert_eq!(
        sibling.try_wait().expect("wait"),
        None,
        "the sibling was untouched"
    );
    sibling.kill().ok();
    sibling.wait().ok();
    drop(e);
    for d in dirs {
        assert!(!d.exists(), "{} is left behind", d.display());
    }
}

#[test]
fn the_process_limit_stops_a_fork_loop() {
    let limits = AgentLimits {
        pids: Some(10),
        ..Default::default()
    };
    let Some(p) = cgroup_or_skip("pids", limits) else {
        return;
    };
    // Bounded: 40 tries, each a sleeper; 10 may exist at once (the shell is one).
    let mut agent = spawn(
        "for i in $(seq 1 40); do sleep 30 & done 2>/dev/null; wait",
        Some(p.join_fds()),
    );
    let e = p.start(agent.id() as i32);
    let Enforcer::Cgroup(cg) = &e else {
        panic!("a cgroup")
    };
    let dirs = cg.dirs().to_vec();
    std::thread::sleep(Duration::from_millis(800));
    let n = cg.pids().len();
    assert!(
        (2..=10).contains(&n),
        "{n} processes in a cgroup of at most 10"
    );
    let out = e.outcome();
    assert!(out.pids_refused > 0, "{out:?}");
    assert!(
        out.reason()
            .unwrap()
            .starts_with("process limit 10 reached")
    );
    e.kill_all();
    assert!(cg.pids().is_empty());
    // Killed, or ended by its shell when a fork was refused (dash gives up then).
    let status = wait(&mut agent, Duration::from_secs(5));
    assert!(!status.success(), "{status:?}");
    drop(e);
    for d in dirs {
        assert!(!d.exists(), "{} is left behind", d.display());
    }
}

#[test]
fn dropping_the_cgroup_kills_what_is_left_and_removes_it() {
    let limits = AgentLimits {
        memory: Some(64 * MIB),
        pids: Some(32),
        cpu: Some(0.5),
    };
    let Some(p) = cgroup_or_skip("drop", limits) else {
        return;
    };
    let mut agent = spawn("sleep 60 & sleep 60 & wait", Some(p.join_fds()));
    let e = p.start(agent.id() as i32);
    let Enforcer::Cgroup(cg) = &e else {
        panic!("a cgroup")
    };
    let dirs = cg.dirs().to_vec();
    assert_eq!(dirs.len(), if cg.version() == Version::V1 { 3 } else { 1 });
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(cg.pids().len(), 3);
    // Dropped with the agent unreaped: the zombie must not keep the directory.
    drop(e);
    for d in &dirs {
        assert!(!d.exists(), "{} is left behind", d.display());
    }
    assert_eq!(
        wait(&mut agent, Duration::from_secs(5)).signal(),
        Some(libc::SIGKILL)
    );
}

#[test]
fn the_watch_stops_a_tree_over_its_limit() {
    if python().is_none() {
        return;
    }
    let limits = AgentLimits {
        memory: Some(100 * MIB),
        pids: Some(5),
        ..Default::default()
    };
    let p = prepare_with("test-watch", &limits, Prefer::Watch).expect("valid");
    assert_eq!(p.kind(), "watch");
    assert!(p.join_fds().is_empty());
    assert!(
        p.warning()
            .is_some_and(|w| w.contains("the process limit (5)")),
        "{:?}",
        p.warning()
    );
    let mut sibling = spawn(&hog(150), None);
    // The hog is a grandchild: the tree, not the root alone, is summed.
    let mut agent = spawn(&format!("sh -c \"{}\"", hog(300)), None);
    let e = p.start(agent.id() as i32);
    let exceeded = runtime()
        .block_on(async { tokio::time::timeout(Duration::from_secs(15), e.exceeded()).await })
        .expect("seen over the limit within 15 s");
    let by = exceeded.by.clone().expect("named");
    assert_eq!(by.command, "python3");
    assert!(exceeded.bytes.is_some_and(|b| b > 100 * MIB));
    assert!(
        exceeded
            .to_string()
            .starts_with("memory limit 100 MiB reached by python3 (pid ")
    );
    e.kill_all();
    assert_eq!(
        wait(&mut agent, Duration::from_secs(5)).signal(),
        Some(libc::SIGKILL)
    );
    assert!(
        std::fs::metadata(format!("/proc/{}", by.pid)).is_err() || is_zombie(by.pid),
        "the hog was killed"
    );
    assert_eq!(e.outcome().memory, Some(exceeded));
    assert_eq!(
        sibling.try_wait().expect("wait"),
        None,
        "the sibling was untouched"
    );
    sibling.kill().ok();
    sibling.wait().ok();
}

#[test]
fn the_watch_leaves_a_tree_under_its_limit_alone() {
    let p = prepare_with(
        "test-watch-under",
        &AgentLimits {
            memory: Some(1 << 30),
            ..Default::default()
        },
        Prefer::Watch,
    )
    .expect("valid");
    let mut agent = spawn("sleep 1", None);
    let e = p.start(agent.id() as i32);
    let r = runtime()
        .block_on(async { tokio::time::timeout(Duration::from_millis(700), e.exceeded()).await });
    assert!(r.is_err(), "a small tree is not over 1 GiB");
    assert!(wait(&mut agent, Duration::from_secs(5)).success());
    assert_eq!(e.outcome(), LimitOutcome::default());
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z"))
}
