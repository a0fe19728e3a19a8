//! The last line of defence behind the hook budget.
//!
//! The budget is enforced by Luau's interrupt, which the VM polls between instructions and the
//! string library polls while matching. Native code that never polls it could still run on
//! past the deadline; the input caps bound how long, and this watchdog makes sure it is never
//! forever: a thread that wakes when an armed call is far past its budget and acts — by default
//! it says so and ends the process. oneshot journals before it acts, so the session is left in
//! a resumable state.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the watchdog does about a stuck hook; called on the watchdog thread with how long the
/// call has run past its budget.
#[derive(Clone)]
pub struct OnStuck(pub Arc<dyn Fn(Duration) + Send + Sync>);

impl OnStuck {
    /// The default: explain on stderr and exit with status 1. Nothing else can stop a thread
    /// stuck in native code; the session files are already journaled, so `oneshot resume`
    /// continues once the policy is fixed.
    pub fn exit_process() -> OnStuck {
        OnStuck(Arc::new(|overrun| {
            eprintln!(
                "oneshot: error: failed to interrupt a policy hook stuck in native code {} past \
                 its budget; exiting — fix the policy, then run `oneshot resume ID`",
                humantime::format_duration(Duration::from_millis(overrun.as_millis() as u64))
            );
            std::process::exit(1);
        }))
    }
}

impl std::fmt::Debug for OnStuck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnStuck(..)")
    }
}

impl PartialEq for OnStuck {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for OnStuck {}

/// When the watchdog steps in: `after` past the end of a call's budget, doing `action`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchdogOptions {
    /// How long past its budget a call may run before the watchdog acts.
    pub after: Duration,
    /// What it does then.
    pub action: OnStuck,
}

impl Default for WatchdogOptions {
    fn default() -> Self {
        WatchdogOptions {
            after: Duration::from_secs(5),
            action: OnStuck::exit_process(),
        }
    }
}

struct Shared {
    base: Instant,
    /// Milliseconds since `base` at which an armed call counts as stuck; 0 when idle.
    stuck_at: AtomicU64,
    stop: AtomicBool,
    /// The thread sleeps without a deadline (nothing armed): the next arm must wake it.
    parked_idle: AtomicBool,
}

/// One watchdog thread per Lua state, told to stop on drop.
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
    after: Duration,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    pub(crate) fn start(opts: WatchdogOptions) -> std::io::Result<Watchdog> {
        let shared = Arc::new(Shared {
            base: Instant::now(),
            stuck_at: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            parked_idle: AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("oneshot-policy-watchdog".into())
            .spawn(move || watch(&s, &opts.action))?;
        Ok(Watchdog {
            shared,
            after: opts.after,
            thread: Some(thread),
        })
    }

    /// A call with this budget deadline started. Wakes the thread only when it sleeps with
    /// nothing armed: while calls follow each other it is already sleeping towards a
    /// deadline, and a later deadline is simply seen when it wakes.
    pub(crate) fn arm(&self, deadline: Instant) {
        let at = (deadline + self.after).saturating_duration_since(self.shared.base);
        // +1 so that 0 keeps meaning "idle".
        self.shared
            .stuck_at
            .store(at.as_millis() as u64 + 1, Ordering::SeqCst);
        if self.shared.parked_idle.swap(false, Ordering::SeqCst)
            && let Some(t) = &self.thread
        {
            t.thread().unpark();
        }
    }

    /// The call ended.
    pub(crate) fn disarm(&self) {
        self.shared.stuck_at.store(0, Ordering::SeqCst);
    }
}

/// The thread: sleeps until the armed call's deadline (or, with nothing armed, until woken),
/// and acts on a call still armed past it. It never wakes while nothing happens.
fn watch(shared: &Shared, action: &OnStuck) {
    while !shared.stop.load(Ordering::SeqCst) {
        let at = shared.stuck_at.load(Ordering::SeqCst);
        if at == 0 {
            // Publish the idle sleep before the last look, so an arm in between either is
            // seen here or sees the flag and unparks (an unpark before park is not lost).
            shared.parked_idle.store(true, Ordering::SeqCst);
            if shared.stuck_at.load(Ordering::SeqCst) == 0 && !shared.stop.load(Ordering::SeqCst) {
                std::thread::park();
            }
            shared.parked_idle.store(false, Ordering::SeqCst);
            continue;
        }
        let now = shared.base.elapsed().as_millis() as u64 + 1;
        if now < at {
            std::thread::park_timeout(Duration::from_millis(at - now));
            continue;
        }
        // Act once per stuck call.
        if shared
            .stuck_at
            .compare_exchange(at, 0, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            (action.0)(Duration::from_millis(now - at));
        }
    }
}

impl Drop for Watchdog {
    /// Stops the thread without waiting for it: joining would add a thread hand-off to every
    /// policy reload, and the woken thread only has to see `stop` and return.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn recorder() -> (OnStuck, Arc<Mutex<Vec<Duration>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        (OnStuck(Arc::new(move |d| s.lock().unwrap().push(d))), seen)
    }

    #[test]
    fn acts_once_on_a_call_stuck_past_budget_and_grace() {
        let (action, seen) = recorder();
        let dog = Watchdog::start(WatchdogOptions {
            after: Duration::from_millis(50),
            action,
        })
        .unwrap();
        dog.arm(Instant::now() + Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(seen.lock().unwrap().len(), 1, "acted exactly once");
        dog.disarm();
    }

    #[test]
    fn a_call_that_ends_in_time_is_left_alone() {
        let (action, seen) = recorder();
        let dog = Watchdog::start(WatchdogOptions {
            after: Duration::from_millis(100),
            action,
        })
        .unwrap();
        for _ in 0..5 {
            dog.arm(Instant::now() + Duration::from_millis(20));
            std::thread::sleep(Duration::from_millis(10));
            dog.disarm();
        }
        std::thread::sleep(Duration::from_millis(300));
        assert!(seen.lock().unwrap().is_empty());
    }

    #[test]
    fn an_idle_watchdog_sleeps_and_still_catches_the_next_stuck_call() {
        let (action, seen) = recorder();
        let dog = Watchdog::start(WatchdogOptions {
            after: Duration::from_millis(30),
            action,
        })
        .unwrap();
        // Let it go idle (parked without a deadline), then arm: the arm must wake it.
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            dog.shared.parked_idle.load(Ordering::SeqCst),
            "idle without a timer"
        );
        dog.arm(Instant::now() + Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[test]
    fn drop_stops_the_thread() {
        let (action, _) = recorder();
        let dog = Watchdog::start(WatchdogOptions {
            after: Duration::from_secs(60),
            action,
        })
        .unwrap();
        let shared = Arc::downgrade(&dog.shared);
        drop(dog);
        // The thread holds the last strong reference until it returns.
        let start = Instant::now();
        while shared.upgrade().is_some() {
            assert!(
                start.elapsed() < Duration::from_secs(2),
                "thread still running"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
