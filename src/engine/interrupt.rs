//! Stopping a running session from outside: Ctrl-C in the CLI, a button in a dashboard.

use tokio::sync::mpsc;

/// What an [`Interrupt`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// A graceful stop (a second one kills).
    Stop,
    /// Kill now.
    Kill,
}

impl Ask {
    /// The event the decision core hears for it.
    pub(crate) fn event(self) -> crate::session::Event {
        match self {
            Ask::Stop => crate::session::Event::Interrupt,
            Ask::Kill => crate::session::Event::Kill,
        }
    }
}

/// A handle that interrupts a running session: [`Interrupt::stop`] asks the running agent to
/// stop (SIGTERM to its group, a grace period, SIGKILL) and the session to pause in
/// INTERRUPTED, resumable; a second `stop`, or [`Interrupt::kill`], kills at once. Cheap to
/// clone, usable from any thread; it does nothing once the session has ended.
#[derive(Debug, Clone)]
pub struct Interrupt {
    tx: mpsc::UnboundedSender<Ask>,
}

impl Interrupt {
    pub(crate) fn channel() -> (Interrupt, mpsc::UnboundedReceiver<Ask>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Interrupt { tx }, rx)
    }

    /// Stop gracefully (the first time) or kill (after that).
    pub fn stop(&self) {
        let _ = self.tx.send(Ask::Stop);
    }

    /// Kill the running agent's process group at once.
    pub fn kill(&self) {
        let _ = self.tx.send(Ask::Kill);
    }
}
