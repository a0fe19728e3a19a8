//! A cgroup's watcher: the kernel enforces the memory limit (it kills the biggest process when
//! the cgroup cannot reclaim below it), but it says neither when nor whom. Every 250 ms this
//! thread reads the OOM-kill counter and the members' memory; when the counter moves, the
//! process killed is the biggest of the last look's that is gone now (else the biggest), and
//! [`Exceeded`] is published for the caller to stop the rest of the agent.

use super::Exceeded;
use super::cgroup::{Version, members, oom_kills};
use super::procfs::{self, ProcUse};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;
use tokio::sync::watch;

/// How often the members are looked at.
pub(crate) const EVERY: Duration = Duration::from_millis(250);

/// The watching thread's handle; stopping or dropping it ends the thread at once.
#[derive(Debug)]
pub(crate) struct Monitor {
    seen: watch::Receiver<Option<Exceeded>>,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Monitor {
    /// A monitor that watches nothing (no memory limit).
    pub(crate) fn idle() -> Monitor {
        let (_tx, seen) = watch::channel(None);
        Monitor {
            seen,
            stop: None,
            thread: None,
        }
    }

    /// Watches the memory cgroup `dir` with `limit`.
    pub(crate) fn start(version: Version, dir: Option<PathBuf>, limit: Option<u64>) -> Monitor {
        let (Some(dir), Some(limit)) = (dir, limit) else {
            return Monitor::idle();
        };
        let (tx, seen) = watch::channel(None);
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("oneshot-cgroup-watch".into())
            .spawn(move || {
                let mut kills = oom_kills(version, &dir);
                let mut last: Vec<ProcUse> = Vec::new();
                loop {
                    let now = oom_kills(version, &dir);
                    if now > kills {
                        kills = now;
                        let alive = members(&dir);
                        let gone = last.iter().filter(|p| !alive.contains(&p.pid));
                        let by = gone
                            .max_by_key(|p| p.bytes)
                            .or_else(|| last.iter().max_by_key(|p| p.bytes))
                            .cloned();
                        tx.send_replace(Some(Exceeded {
                            limit,
                            by,
                            bytes: None,
                        }));
                    }
                    last = members(&dir)
                        .into_iter()
                        .filter_map(procfs::usage)
                        .collect();
                    match stopped.recv_timeout(EVERY) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                }
            })
            .ok();
        Monitor {
            seen,
            stop: Some(stop),
            thread,
        }
    }

    /// What was seen so far.
    pub(crate) fn seen(&self) -> Option<Exceeded> {
        self.seen.borrow().clone()
    }

    /// Resolves when a kill is seen (never, once the monitor is stopped without one).
    pub(crate) async fn exceeded(&self) -> Exceeded {
        let mut rx = self.seen.clone();
        // The guard is let go before any other await: the future stays `Send`.
        let seen = rx.wait_for(Option::is_some).await.map(|v| v.clone());
        match seen {
            Ok(v) => v.expect("waited for Some"),
            Err(_) => std::future::pending().await,
        }
    }

    /// Ends the thread.
    pub(crate) fn stop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop();
    }
}
