//! Removing old finished sessions (`oneshot prune`).
//!
//! Only a session in a terminal state (COMPLETED, FAILED, REJECTED) whose last update is older
//! than the cut-off goes: never one that runs or can be resumed. Each is removed under its own
//! lock, and its state is read again under it, so a session some oneshot holds is never
//! removed, whatever the listing said a moment before.

use super::dir::Store;
use super::error::{StoreError, io_err};
use super::summary::Summary;

/// What to prune.
#[derive(Debug, Clone, Copy)]
pub struct PruneOptions {
    /// Sessions last updated before this time (unix milliseconds) go.
    pub before_ms: u64,
    /// Only say what would go; remove nothing and take no lock.
    pub dry_run: bool,
}

/// One session pruned (or, in a dry run, that would be).
#[derive(Debug, Clone, PartialEq)]
pub struct Pruned {
    /// Its summary as read before removal.
    pub summary: Summary,
}

/// A session that qualified but was left alone, and why.
#[derive(Debug)]
pub struct Kept {
    /// The session id.
    pub id: String,
    /// Why it was not removed (locked by a live oneshot, could not be removed).
    pub error: StoreError,
}

impl Store {
    /// Removes the terminal sessions last updated before `opts.before_ms` (see the module
    /// docs); returns those removed and those that qualified but could not be. Sessions whose
    /// state file cannot be read are never removed.
    pub fn prune(&self, opts: PruneOptions) -> Result<(Vec<Pruned>, Vec<Kept>), StoreError> {
        let (mut pruned, mut kept) = (Vec::new(), Vec::new());
        for (dir, summary) in self.list()? {
            let Ok(summary) = summary else { continue };
            if !old_and_ended(&summary, opts.before_ms) {
                continue;
            }
            if opts.dry_run {
                pruned.push(Pruned { summary });
                continue;
            }
            let removed = dir.lock().and_then(|lock| {
                // Under the lock: still ended and old (a `resume` cannot have changed it, but a
                // state file replaced since the listing is read again rather than trusted).
                let now = dir.read_state()?;
                let still = now.state().is_terminal() && now.updated_ms < opts.before_ms;
                if still {
                    std::fs::remove_dir_all(dir.path()).map_err(io_err("remove", dir.path()))?;
                }
                drop(lock);
                Ok(still)
            });
            match removed {
                Ok(true) => pruned.push(Pruned { summary }),
                Ok(false) => {}
                Err(error) => kept.push(Kept {
                    id: dir.id().to_string(),
                    error,
                }),
            }
        }
        Ok((pruned, kept))
    }
}

fn old_and_ended(s: &Summary, before_ms: u64) -> bool {
    s.state.is_terminal() && s.updated_ms < before_ms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{NewSession, Phase, PolicyRef, Session};

    fn session(store: &Store, phase: Phase, updated_ms: u64) -> String {
        let dir = store.create_session().unwrap();
        let mut s = Session::new(
            NewSession {
                id: dir.id().into(),
                task: "t".into(),
                workdir: "/w".into(),
                worker_cmd: "w".into(),
                auditor_cmd: "a".into(),
            },
            PolicyRef {
                path: None,
                hash: "h".into(),
                generation: 1,
                budget: None,
            },
            3,
            updated_ms,
        );
        s.phase = phase;
        s.updated_ms = updated_ms;
        let redactor = crate::redact::Redactor::new(&[], Vec::new()).unwrap();
        dir.write_state(&redactor.seal(&s).unwrap()).unwrap();
        dir.id().to_string()
    }

    #[test]
    fn only_old_ended_unlocked_sessions_go() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::new(tmp.path().join("state")).with_key_file(tmp.path().join("key"));
        let old_done = session(&store, Phase::Completed, 1_000);
        let old_failed = session(&store, Phase::failed(), 1_000);
        let new_done = session(&store, Phase::Completed, 9_000);
        let old_created = session(&store, Phase::Created, 1_000);
        let old_locked = session(&store, Phase::Rejected, 1_000);
        let held = store.open(&old_locked).unwrap().lock().unwrap();
        let opts = |dry_run| PruneOptions {
            before_ms: 5_000,
            dry_run,
        };

        let (would, _) = store.prune(opts(true)).unwrap();
        assert_eq!(would.len(), 3, "the dry run lists the locked one too");
        assert_eq!(store.ids().unwrap().len(), 5, "and removes nothing");

        let (gone, kept) = store.prune(opts(false)).unwrap();
        let mut gone: Vec<String> = gone.into_iter().map(|p| p.summary.id).collect();
        gone.sort();
        let mut want = vec![old_done, old_failed];
        want.sort();
        assert_eq!(gone, want);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].id, old_locked);
        assert!(matches!(kept[0].error, StoreError::Locked { .. }));
        let mut left = store.ids().unwrap();
        left.sort();
        let mut want = vec![new_done, old_created, old_locked];
        want.sort();
        assert_eq!(left, want);
        drop(held);
    }
}
