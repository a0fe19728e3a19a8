use super::*;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Runs `script` under `sh` in the namespaces `plan` makes, as an agent would be started.
fn run_in(plan: &Plan, script: &str) -> (std::process::Output, Option<Listeners>) {
    let mut p = plan.prepare().unwrap();
    let raw = &p as *const Prepared as usize;
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script);
    // SAFETY: `enter` makes async-signal-safe calls only; `p` outlives the spawn.
    unsafe {
        cmd.pre_exec(move || enter(&*(raw as *const Prepared)));
    }
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let listener = p.take_listener().unwrap();
    (child.wait_with_output().unwrap(), listener)
}

fn skip() -> bool {
    if let Err(why) = available() {
        eprintln!("skipped: namespaces unavailable here: {why}");
        return true;
    }
    false
}

#[test]
fn hidden_paths_are_empty_and_read_only_kept_paths_inside_them_stay_writable() {
    if skip() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let state = root.join("state");
    let work = state.join("worktrees/job-1");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(state.join("key"), "secret").unwrap();
    std::fs::write(work.join("file"), "mine").unwrap();
    let keyfile = root.join("loose-key");
    std::fs::write(&keyfile, "secret too").unwrap();
    // A hidden dir inside the kept workdir is hidden again.
    std::fs::create_dir_all(work.join("inner-state")).unwrap();
    std::fs::write(work.join("inner-state/db"), "secret three").unwrap();
    let plan = Plan::new(
        &[state.clone(), keyfile.clone(), work.join("inner-state")],
        std::slice::from_ref(&work),
        false,
    );
    let script = format!(
        "cat {s}/key; echo ls=$(ls {s}); cat {k}; echo k=$?; cat {w}/file; echo new > {w}/made \
         && echo made; touch {s}/forged; echo forged=$?; cat {w}/inner-state/db; echo i=$?; \
         echo uid=$(id -u)",
        s = state.display(),
        k = keyfile.display(),
        w = work.display()
    );
    let (out, listener) = run_in(&plan, &script);
    assert!(listener.is_none());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("secret"), "{text}");
    assert!(text.contains("ls=worktrees"), "{text}");
    assert!(text.contains("mine"), "{text}");
    assert!(text.contains("made"), "{text}");
    assert!(!text.contains("forged=0"), "{text}");
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    assert!(text.contains(&format!("uid={uid}")), "{text}");
    // What the agent wrote in its workdir is there outside; nothing reached the hidden dir.
    assert_eq!(std::fs::read_to_string(work.join("made")).unwrap(), "new\n");
    assert!(!state.join("forged").exists());
    assert_eq!(
        std::fs::read_to_string(state.join("key")).unwrap(),
        "secret"
    );
}

#[test]
fn the_masks_cannot_be_unmounted_from_inside() {
    if skip() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let state = d.path().canonicalize().unwrap().join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("key"), "secret").unwrap();
    let plan = Plan::new(std::slice::from_ref(&state), &[], false);
    let script = format!(
        "umount {s} 2>/dev/null; umount -l {s} 2>/dev/null; cat {s}/key 2>/dev/null; \
         unshare -Urm sh -c 'umount {s}; cat {s}/key' 2>/dev/null; echo end",
        s = state.display()
    );
    let (out, _) = run_in(&plan, &script);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("secret"), "{text}");
    assert!(text.contains("end"), "{text}");
}

#[test]
fn the_network_is_loopback_alone_and_the_listener_comes_back() {
    if skip() {
        return;
    }
    // A host server the agent must not reach directly, and a port forwarded in.
    let outside = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = outside.local_addr().unwrap().port();
    let forwarded = 4000 + (std::process::id() % 1000) as u16;
    let plan = Plan::with_forwards(&[], &[], true, vec![forwarded]);
    let script = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo direct=open || echo direct=refused; \
         (exec 3<>/dev/tcp/10.1.2.3/80) 2>&1 | head -c 200; echo; \
         exec 3<>/dev/tcp/127.0.0.1/{AGENT_PROXY_PORT} && echo hello >&3 && echo proxied; \
         exec 4<>/dev/tcp/127.0.0.1/{forwarded} && echo forwarded >&4 && echo forward"
    );
    let mut p = plan.prepare().unwrap();
    let raw = &p as *const Prepared as usize;
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(&script);
    // SAFETY: as in `run_in`.
    unsafe {
        cmd.pre_exec(move || enter(&*(raw as *const Prepared)));
    }
    let start = std::time::Instant::now();
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let listeners = p.take_listener().unwrap().expect("a listener");
    let read = |l: &std::net::TcpListener| {
        l.set_nonblocking(false).unwrap();
        let (mut conn, _) = l.accept().unwrap();
        let mut got = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(&mut conn), &mut got).unwrap();
        got
    };
    assert_eq!(read(&listeners.proxy), "hello\n");
    assert_eq!(listeners.forwards.len(), 1);
    assert_eq!(listeners.forwards[0].0, forwarded);
    assert_eq!(read(&listeners.forwards[0].1), "forwarded\n");
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("direct=refused"), "{text}");
    assert!(text.contains("unreachable"), "{text}");
    assert!(text.contains("proxied"), "{text}");
    assert!(text.contains("forward"), "{text}");
    // Refused at once, not after a timeout.
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn a_plan_restores_only_what_a_mask_covers() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    for p in ["state/w/x", "other"] {
        std::fs::create_dir_all(root.join(p)).unwrap();
    }
    let plan = Plan::new(
        &[root.join("state"), root.join("missing")],
        &[root.join("state/w/x"), root.join("other"), root.clone()],
        false,
    );
    assert_eq!(
        plan.ops,
        vec![
            Op::Keep(root.join("state/w/x"), 0),
            Op::MaskDir(root.join("state")),
            Op::Mkdir(root.join("state/w")),
            Op::Mkdir(root.join("state/w/x")),
            Op::Restore(0, root.join("state/w/x")),
            Op::ReadOnly(root.join("state")),
        ]
    );
}
