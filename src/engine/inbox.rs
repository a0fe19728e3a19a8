//! The session's inbox, as the loop hears it: messages posted there (`oneshot say`) become
//! [`Event::MessageSaid`]s; each file is removed only once the state file holding its message
//! has been written, so a crash in between reads it again — and the core knows it by its id.

use super::{Engine, EngineError, Observer};
use crate::session::Event;
use crate::store::{Posted, remove_post};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::VecDeque;
use tokio::sync::mpsc;

/// The inbox being watched.
pub(super) struct InboxWatch {
    /// Raised (coalesced) when something was written to the inbox.
    pub changed: mpsc::Receiver<()>,
    /// Kept alive for the watch to last.
    _watcher: Option<RecommendedWatcher>,
    /// Posts handed to the core, removed once the session holds them durably.
    pending: Vec<Posted>,
}

impl InboxWatch {
    /// Watches `dir` (creating it, private); without inotify the loop still reads the inbox at
    /// every status tick — a message is late, never lost.
    pub(super) fn start(dir: &crate::store::SessionDir) -> (InboxWatch, Option<String>) {
        let (tx, rx) = mpsc::channel(1);
        let path = dir.inbox_path();
        let made = crate::store::create_private_dir(&path)
            .map_err(notify::Error::io)
            .and_then(|()| {
                notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                    let wanted = match res {
                        Ok(e) => !matches!(e.kind, EventKind::Access(_)),
                        // An overflow: something may have been missed; look again.
                        Err(_) => true,
                    };
                    if wanted {
                        let _ = tx.try_send(());
                    }
                })
            })
            .and_then(|mut w| w.watch(&path, RecursiveMode::NonRecursive).map(|()| w));
        let (watcher, warning) = match made {
            Ok(w) => (Some(w), None),
            Err(e) => (
                None,
                Some(format!(
                    "cannot watch the session's inbox {} ({e}): messages said to it (oneshot \
                     say) are read once a second",
                    path.display()
                )),
            ),
        };
        let watch = InboxWatch {
            changed: rx,
            _watcher: watcher,
            pending: Vec::new(),
        };
        (watch, warning)
    }

    /// Whether the inbox is only read at ticks (no watch).
    pub(super) fn polled(&self) -> bool {
        self._watcher.is_none()
    }
}

impl Engine {
    /// Reads the inbox: every message the session does not hold yet joins `queue`; files
    /// that are not messages are set aside and said so.
    pub(super) fn read_inbox(
        &mut self,
        queue: &mut VecDeque<Event>,
        observer: &mut dyn Observer,
    ) -> Result<(), EngineError> {
        let (posted, bad) = self.dir.read_inbox();
        for b in bad {
            let m = format!(
                "a file in the session's inbox is not a message and was set aside as {}: {}",
                b.path.display(),
                b.why
            );
            self.warn_out_of_band(&m, observer)?;
        }
        for post in posted {
            let known = self.session.messages.iter().any(|m| m.id == post.said.id);
            let pending = self.inbox.pending.iter().any(|p| p.said.id == post.said.id);
            if pending {
                continue;
            }
            if !known {
                queue.push_back(Event::MessageSaid(post.said.clone()));
            }
            // Known already: held (a crash came between the state file and the removal), so
            // only its file is left to remove.
            self.inbox.pending.push(post);
        }
        Ok(())
    }

    /// Removes the inbox files of messages the state file now holds (call after it was
    /// written).
    pub(super) fn clear_inbox(&mut self) {
        let held = |p: &Posted| self.session.messages.iter().any(|m| m.id == p.said.id);
        if self.dirty || !self.inbox.pending.iter().any(held) {
            return;
        }
        let (done, left): (Vec<Posted>, Vec<Posted>) = std::mem::take(&mut self.inbox.pending)
            .into_iter()
            .partition(|p| self.session.messages.iter().any(|m| m.id == p.said.id));
        self.inbox.pending = left;
        for p in done {
            // Left behind, it is read again and known by its id: harmless.
            let _ = remove_post(&p.path);
        }
    }
}
