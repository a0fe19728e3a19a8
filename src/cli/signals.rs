//! Signals from the first instant: SIGINT, SIGTERM and SIGHUP are caught as soon as the command
//! line says a session will run — before the policy loads, the first hooks run or anything is
//! spawned — so an early Ctrl-C pauses the session instead of killing oneshot, and one that
//! lands during a long hook is acted on when the hook returns.
//!
//! The handlers are tokio's, registered on the runtime the session later runs on; a signal
//! that arrives before the loop listens is kept until it does. Commands that run no session
//! keep the default behaviour (a Ctrl-C ends them).

use anyhow::{Context, Result};
use oneshot::engine::Interrupt;
use tokio::runtime::Runtime;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The runtime a session runs on, with its signal handlers already installed.
pub struct Signals {
    /// The loop runs on this (current-thread) runtime: agents are spawned from this thread,
    /// and on Linux their parent-death signal is tied to it.
    pub rt: Runtime,
    streams: [Signal; 3],
}

impl Signals {
    /// Builds the runtime and installs the handlers.
    pub fn install() -> Result<Signals> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
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
        Ok(Signals { rt, streams })
    }

    /// Splits off the handlers, to be forwarded by [`forward`] on [`Signals::rt`].
    pub fn split(self) -> (Runtime, [Signal; 3]) {
        (self.rt, self.streams)
    }
}

/// Forwards SIGINT, SIGTERM and SIGHUP (a closed terminal) to the session: the first pauses it
/// gracefully, the next kills the agent at once. The agents run in their own process groups, so
/// the terminal's Ctrl-C reaches only us.
pub async fn forward(streams: [Signal; 3], interrupt: Interrupt) {
    let [mut int, mut term, mut hup] = streams;
    let mut count = 0;
    loop {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        count += 1;
        if count == 1 {
            errln!("\noneshot: stopping the agent (press Ctrl-C again to kill it now)");
        }
        interrupt.stop();
    }
}
