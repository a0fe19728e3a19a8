//! Signals from the first instant: SIGINT, SIGTERM and SIGHUP are counted from `main`'s first
//! line ([`catch_early`]); as soon as the command line says a session will run, tokio's handlers
//! take over on the runtime the session later runs on ([`Signals::install`]) — before the policy
//! loads, the first hooks run or anything is spawned — and the early ones are delivered when the
//! loop starts. So an early Ctrl-C pauses the session instead of killing oneshot, and one that
//! lands during a long hook is acted on when the hook returns. Commands that run no session get
//! the default behaviour back ([`release_early`]): a Ctrl-C ends them.

use anyhow::{Context, Result};
use oneshot::engine::Interrupt;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use tokio::runtime::Runtime;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The signals a session treats as "pause" (the second one: "kill").
const CAUGHT: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Signals caught before the command line was read (see [`catch_early`]).
static EARLY: AtomicU32 = AtomicU32::new(0);
/// The last of them.
static EARLY_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The session's own handlers are in place: the early handler stands down.
static LATE: AtomicBool = AtomicBool::new(false);

extern "C" fn early_handler(sig: libc::c_int) {
    // Only atomics: async-signal-safe.
    if !LATE.load(Ordering::SeqCst) {
        EARLY.fetch_add(1, Ordering::SeqCst);
        EARLY_SIGNAL.store(sig, Ordering::SeqCst);
    }
}

/// The very first thing `main` does: count SIGINT, SIGTERM and SIGHUP instead of dying of
/// them, until it is known whether a session will run ([`Signals::install`] takes them over)
/// or not ([`release_early`] restores the default).
pub fn catch_early() {
    for sig in CAUGHT {
        // SAFETY: installs a handler that only touches atomics.
        unsafe {
            libc::signal(sig, early_handler as *const () as libc::sighandler_t);
        }
    }
}

/// For commands that run no session: the default behaviour again, and a signal that came
/// while the command line was read is acted on now (it ends the command, as it would have).
pub fn release_early() {
    for sig in CAUGHT {
        // SAFETY: restoring the default disposition.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
    if EARLY.load(Ordering::SeqCst) > 0 {
        // SAFETY: raising a signal at ourselves.
        unsafe {
            libc::raise(EARLY_SIGNAL.load(Ordering::SeqCst));
        }
    }
}

/// The runtime a session runs on, with its signal handlers already installed.
pub struct Signals {
    /// The loop runs on this (current-thread) runtime: agents are spawned from this thread,
    /// and on Linux their parent-death signal is tied to it.
    pub rt: Runtime,
    streams: [Signal; 3],
    /// Signals that came before these handlers: delivered as interrupts when the session starts.
    early: u32,
}

impl Signals {
    /// Builds the runtime and installs the handlers.
    pub fn install() -> Result<Signals> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            // A runner's git and file work, a few steps at a time; more would only contend.
            .max_blocking_threads(8)
            .build()
            .context("start the async runtime")?;
        let streams = {
            let _inside = rt.enter();
            [
                SignalKind::interrupt(),
                SignalKind::terminate(),
                SignalKind::hangup(),
            ]
            .map(signal)
        };
        let [int, term, hup] = streams;
        let streams = [
            int.context("install the SIGINT handler")?,
            term.context("install the SIGTERM handler")?,
            hup.context("install the SIGHUP handler")?,
        ];
        // tokio delivers a signal on the runtime's thread, which a running policy hook holds;
        // this action cuts the hook short from the handler itself, so a Ctrl-C during a 5 s
        // hook pauses the session now, not when the hook's budget runs out.
        for sig in CAUGHT {
            // SAFETY: the action is one atomic add, async-signal-safe.
            unsafe { signal_hook_registry::register(sig, oneshot::policy::interrupt_hooks) }
                .context("install the policy hook's interrupt")?;
        }
        LATE.store(true, Ordering::SeqCst);
        let early = EARLY.swap(0, Ordering::SeqCst);
        Ok(Signals { rt, streams, early })
    }

    /// Splits off the handlers, to be forwarded by [`forward`] on [`Signals::rt`], and the
    /// number of signals that came before them.
    pub fn split(self) -> (Runtime, [Signal; 3], u32) {
        (self.rt, self.streams, self.early)
    }
}

/// Forwards SIGINT, SIGTERM and SIGHUP (a closed terminal) to the session: the first pauses it
/// gracefully, the next kills the agent at once. The agents run in their own process groups, so
/// the terminal's Ctrl-C reaches only us.
pub async fn forward(streams: [Signal; 3], interrupt: Interrupt, early: u32) {
    each_signal(streams, early, |count| {
        if count == 1 {
            errln!("\noneshot: stopping the agent (press Ctrl-C again to kill it now)");
        }
        interrupt.stop();
    })
    .await
}

/// Calls `on` with 1, 2, … for each SIGINT, SIGTERM or SIGHUP: first for the `early` ones that
/// came before the handlers (two at most: a third could only kill again), then as they come.
/// Never returns; the caller aborts it.
pub async fn each_signal(streams: [Signal; 3], early: u32, mut on: impl FnMut(u32)) {
    let [mut int, mut term, mut hup] = streams;
    let mut count = 0;
    for _ in 0..early.min(2) {
        count += 1;
        on(count);
    }
    loop {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        count += 1;
        on(count);
    }
}
