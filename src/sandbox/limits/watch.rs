//! The fallback where no cgroup can be made: a thread that sums the memory of the agent's
//! process tree (its process group, its descendants, and any process once seen in it) every
//! 250 ms and, over the limit, says so — the caller stops the agent. Weaker than a cgroup: a
//! quick allocation can overshoot between looks, and a process that leaves the group and is
//! reparented before a look escapes it.

use super::monitor::EVERY;
use super::procfs::{self, ProcUse};
use super::{Exceeded, LimitOutcome};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// A watch over one agent's process tree.
#[derive(Debug)]
pub struct Watch {
    root: i32,
    seen: watch::Receiver<Option<Exceeded>>,
    /// The tree at the last look (pid, start time), for [`Watch::kill_all`].
    tree: Arc<Mutex<HashSet<(i32, u64)>>>,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    /// Starts watching the tree of `root_pid` (a process group leader: its whole group is
    /// counted) against `limit` bytes.
    pub fn start(root_pid: i32, limit: u64) -> Watch {
        let (tx, seen) = watch::channel(None);
        let (stop, stopped) = mpsc::channel::<()>();
        let tree = Arc::new(Mutex::new(HashSet::new()));
        let shared = Arc::clone(&tree);
        let thread = std::thread::Builder::new()
            .name("oneshot-memory-watch".into())
            .spawn(move || {
                let Some(root) = procfs::stat(root_pid) else {
                    return;
                };
                // Its group only if it leads one: else the group is the runner's own.
                let group = (root.pgrp == root_pid).then_some(root_pid);
                let mut known = HashSet::from([(root_pid, root.start)]);
                loop {
                    known = procfs::tree(&known, group);
                    if let Ok(mut t) = shared.lock() {
                        t.clone_from(&known);
                    }
                    let (total, biggest) = procfs::measure(known.iter().map(|(p, _)| *p));
                    if total > limit && tx.borrow().is_none() {
                        tx.send_replace(Some(Exceeded {
                            limit,
                            by: biggest,
                            bytes: Some(total),
                        }));
                    }
                    if known.is_empty() {
                        return;
                    }
                    match stopped.recv_timeout(EVERY) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                }
            })
            .ok();
        Watch {
            root: root_pid,
            seen,
            tree,
            stop: Some(stop),
            thread,
        }
    }

    /// Resolves when the tree is found over the limit (never, if the tree ends under it).
    pub async fn exceeded(&self) -> Exceeded {
        let mut rx = self.seen.clone();
        // The guard is let go before any other await: the future stays `Send`.
        let seen = rx.wait_for(Option::is_some).await.map(|v| v.clone());
        match seen {
            Ok(v) => v.expect("waited for Some"),
            Err(_) => std::future::pending().await,
        }
    }

    /// The verdict so far, without waiting.
    pub fn try_exceeded(&self) -> Option<Exceeded> {
        self.seen.borrow().clone()
    }

    /// Kills the tree (SIGKILL to the group and to every process of the last look and their
    /// descendants), again until none is left, for up to 5 s.
    pub fn kill_all(&self) {
        let group = procfs::stat(self.root)
            .filter(|s| s.pgrp == self.root)
            .map(|_| self.root);
        let mut known = self.tree.lock().map(|t| t.clone()).unwrap_or_default();
        if let Some(s) = procfs::stat(self.root) {
            known.insert((s.pid, s.start));
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(g) = group {
                // SAFETY: kill(2) of a process group; no memory is touched.
                unsafe { libc::kill(-g, libc::SIGKILL) };
            }
            known = procfs::tree(&known, group);
            // A killed but unreaped process (a zombie) stays in /proc: it is dead already.
            known.retain(|(p, _)| !zombie(*p));
            if known.is_empty() || Instant::now() > deadline {
                return;
            }
            for (p, _) in &known {
                // SAFETY: as above, a pid of the tree just read.
                unsafe { libc::kill(*p, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The memory limit's verdict (the watch enforces no other).
    pub fn outcome(&self) -> LimitOutcome {
        LimitOutcome {
            memory: self.try_exceeded(),
            ..LimitOutcome::default()
        }
    }

    /// The process of the tree using the most memory now.
    pub fn biggest(&self) -> Option<ProcUse> {
        let pids: Vec<i32> = self
            .tree
            .lock()
            .map(|t| t.iter().map(|(p, _)| *p).collect())
            .unwrap_or_default();
        procfs::measure(pids).1
    }
}

/// The process is a zombie (state `Z`), or gone.
fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| {
            t.rfind(')')
                .map(|i| t[i + 1..].trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
