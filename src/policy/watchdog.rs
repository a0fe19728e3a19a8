//! The last line of defence behind the hook budget.
//!
//! The budget is enforced by Luau's interrupt, which the VM polls between instructions and the
//! string library polls while matching. Native code that never polls it could still run on
//! past the deadline; the input caps bound how long, and this watchdog makes sure it is never
//! forever: a thread that wakes when an armed call is far past its budget and acts — by default
//! it says so and ends the process. oneshot journals before it acts, so the session is left in
//! a resumable state.
//!
//! One thread watches every Lua state in the process: a `job run` drives a thousand sessions,
//! each with its own policy state, and a thread apiece would cost a thousand stacks for calls
//! that run one at a time anyway. Each state registers a slot; arming a call sets its slot's
//! deadline and wakes the thread only when that deadline comes before the one it sleeps towards.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
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

/// The calls watched by one thread, each by the slot of its Lua state.
struct Registry {
    /// The thread's name.
    name: &'static str,
    state: Mutex<State>,
    /// Wakes the thread: a deadline earlier than the one it sleeps towards was armed.
    wake: Condvar,
}

#[derive(Default)]
struct State {
    next_id: u64,
    slots: HashMap<u64, Slot>,
    /// When the thread looks next by itself; `None` while it waits with nothing armed.
    wake_at: Option<Instant>,
    started: bool,
}

struct Slot {
    /// When the armed call counts as stuck; `None` when idle.
    stuck_at: Option<Instant>,
    action: OnStuck,
}

impl Registry {
    fn new(name: &'static str) -> Arc<Registry> {
        Arc::new(Registry {
            name,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        })
    }

    /// The process's registry, shared by every Lua state.
    fn global() -> Arc<Registry> {
        static GLOBAL: OnceLock<Arc<Registry>> = OnceLock::new();
        // Fits the kernel's 15-byte thread name, so `ps -L` shows it whole.
        Arc::clone(GLOBAL.get_or_init(|| Registry::new("policy-watchdog")))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The lock guards plain data no panic can leave half-written.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One Lua state's registration with the shared watchdog thread; unregisters on drop.
pub(crate) struct Watchdog {
    registry: Arc<Registry>,
    id: u64,
    after: Duration,
}

impl Watchdog {
    /// Registers with the process's watchdog, starting its thread on first use.
    pub(crate) fn start(opts: WatchdogOptions) -> std::io::Result<Watchdog> {
        Watchdog::start_in(Registry::global(), opts)
    }

    fn start_in(registry: Arc<Registry>, opts: WatchdogOptions) -> std::io::Result<Watchdog> {
        let mut state = registry.lock();
        if !state.started {
            let r = Arc::clone(&registry);
            std::thread::Builder::new()
                .name(registry.name.into())
                .spawn(move || watch(&r))?;
            state.started = true;
        }
        let id = state.next_id;
        state.next_id += 1;
        state.slots.insert(
            id,
            Slot {
                stuck_at: None,
                action: opts.action,
            },
        );
        drop(state);
        Ok(Watchdog {
            registry,
            id,
            after: opts.after,
        })
    }

    /// A call with this budget deadline started. Wakes the thread only when it would otherwise
    /// sleep past this call's point of being stuck: while calls follow each other it is already
    /// sleeping towards a deadline, and a later one is simply seen when it wakes.
    pub(crate) fn arm(&self, deadline: Instant) {
        let at = deadline + self.after;
        let mut state = self.registry.lock();
        if let Some(slot) = state.slots.get_mut(&self.id) {
            slot.stuck_at = Some(at);
        }
        if state.wake_at.is_none_or(|w| at < w) {
            self.registry.wake.notify_one();
        }
    }

    /// The call ended.
    pub(crate) fn disarm(&self) {
        if let Some(slot) = self.registry.lock().slots.get_mut(&self.id) {
            slot.stuck_at = None;
        }
    }
}

impl Drop for Watchdog {
    /// Unregisters; the thread stays for the next state (a reload builds one before it drops
    /// the old), and waits without a timer while nothing is armed.
    fn drop(&mut self) {
        self.registry.lock().slots.remove(&self.id);
    }
}

/// The thread: sleeps until the earliest armed call would be stuck (or, with nothing armed,
/// until woken), and acts once on each call still armed past that point. It never wakes while
/// nothing happens.
fn watch(registry: &Registry) {
    let mut state = registry.lock();
    loop {
        let now = Instant::now();
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        for slot in state.slots.values_mut() {
            match slot.stuck_at {
                Some(at) if at <= now => {
                    // Act once per stuck call.
                    slot.stuck_at = None;
                    due.push((slot.action.clone(), now - at));
                }
                Some(at) => next = Some(next.map_or(at, |n| n.min(at))),
                None => {}
            }
        }
        state.wake_at = next;
        if !due.is_empty() {
            // The action may take its time (or end the process); never while holding the lock
            // every hook call takes.
            drop(state);
            for (action, overrun) in due {
                (action.0)(overrun);
            }
            state = registry.lock();
            continue;
        }
        state = match next {
            None => registry.wake.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(at) => {
                let wait = at.saturating_duration_since(now);
                match registry.wake.wait_timeout(state, wait) {
                    Ok((s, _)) => s,
                    Err(e) => e.into_inner().0,
                }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder() -> (OnStuck, Arc<Mutex<Vec<Duration>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        (OnStuck(Arc::new(move |d| s.lock().unwrap().push(d))), seen)
    }

    fn dog(registry: &Arc<Registry>, after_ms: u64, action: OnStuck) -> Watchdog {
        Watchdog::start_in(
            Arc::clone(registry),
            WatchdogOptions {
                after: Duration::from_millis(after_ms),
                action,
            },
        )
        .unwrap()
    }

    #[test]
    fn acts_once_on_a_call_stuck_past_budget_and_grace() {
        let (action, seen) = recorder();
        let dog = dog(&Registry::new("test-watchdog"), 50, action);
        dog.arm(Instant::now() + Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(seen.lock().unwrap().len(), 1, "acted exactly once");
        dog.disarm();
    }

    #[test]
    fn a_call_that_ends_in_time_is_left_alone() {
        let (action, seen) = recorder();
        let dog = dog(&Registry::new("test-watchdog"), 100, action);
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
        let registry = Registry::new("test-watchdog");
        let dog = dog(&registry, 30, action);
        // Let it go idle (waiting without a timer), then arm: the arm must wake it.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(registry.lock().wake_at, None, "idle without a timer");
        dog.arm(Instant::now() + Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[test]
    fn one_thread_watches_many_states_and_acts_on_the_stuck_one_only() {
        let registry = Registry::new("test-watchdog");
        let (slow_action, slow_seen) = recorder();
        let (quick_action, quick_seen) = recorder();
        // A far deadline armed first: the near one armed after must still wake the thread.
        let far = dog(&registry, 60_000, quick_action);
        far.arm(Instant::now());
        let stuck = dog(&registry, 20, slow_action);
        stuck.arm(Instant::now() + Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            slow_seen.lock().unwrap().len(),
            1,
            "the stuck call is caught"
        );
        assert!(quick_seen.lock().unwrap().is_empty(), "the other is not");
        assert!(registry.lock().started);
        assert_eq!(registry.lock().slots.len(), 2);
    }

    #[test]
    fn drop_unregisters_and_a_dropped_state_is_never_acted_on() {
        let registry = Registry::new("test-watchdog");
        let (action, seen) = recorder();
        let d = dog(&registry, 20, action);
        d.arm(Instant::now() + Duration::from_millis(10));
        drop(d);
        assert!(registry.lock().slots.is_empty());
        std::thread::sleep(Duration::from_millis(200));
        assert!(seen.lock().unwrap().is_empty());
    }

    #[test]
    fn every_state_in_the_process_shares_one_thread() {
        let dogs: Vec<Watchdog> = (0..50)
            .map(|_| Watchdog::start(WatchdogOptions::default()).unwrap())
            .collect();
        let count = || {
            std::fs::read_dir("/proc/self/task")
                .unwrap()
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .filter(|name| name.trim() == "policy-watchdog")
                .count()
        };
        // The thread names itself once it runs.
        let start = Instant::now();
        while count() == 0 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let named = count();
        assert_eq!(named, 1, "one watchdog thread for {} states", dogs.len());
    }
}
