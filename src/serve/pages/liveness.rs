//! Whether anyone is working on a job, as far as the store can tell — and saying so when it
//! cannot. A job in a transient state is worked on only while a runner holds its lease and
//! keeps beating; the page says *stale* when its lease expired by the **store's** clock (the
//! one every claim is judged by) or its runner's heartbeat row is older than the runner's ttl,
//! and *unknown* when the store did not answer, rather than show the state as if it moved.

use super::html::{Esc, w};
use super::time::span;
use crate::job::JobState;
use crate::job::store::{JobStore, RunnerRow};

/// What the store says about who holds a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// A resting state: no lease is held, none is expected.
    Resting,
    /// A runner holds a live lease.
    Live {
        /// The runner.
        runner: String,
        /// How long ago it last beat, when it keeps a heartbeat row.
        beat_age_ms: Option<u64>,
        /// When its lease expires unless renewed.
        until_ms: u64,
    },
    /// Nobody is working on it, though its state says a step is under way.
    Stale {
        /// The runner its lease names, if any.
        runner: Option<String>,
        /// Why it reads stale.
        why: String,
    },
    /// The store could not say.
    Unknown {
        /// What did not answer.
        why: String,
    },
}

/// What the page knows of the store's time and runners, read once per page.
#[derive(Debug)]
pub(crate) struct Fleet {
    /// The store's now, or why it is unknown.
    pub now: Result<u64, String>,
    /// The runners' rows, or why they are unknown.
    pub runners: Result<Vec<RunnerRow>, String>,
}

impl Fleet {
    /// Reads the store's clock and its runners.
    pub(crate) fn read(store: &dyn JobStore) -> Fleet {
        Fleet {
            now: store.now_ms().map_err(|e| e.to_string()),
            runners: store.runners().map_err(|e| e.to_string()),
        }
    }

    /// Why pending jobs wait, when every live runner holds back (`job run --reserve`).
    pub(crate) fn pending_wait(&self) -> Option<&crate::job::store::RunnerWait> {
        let (Ok(now), Ok(rows)) = (&self.now, &self.runners) else {
            return None;
        };
        crate::job::store::pending_wait(rows, *now)
    }

    /// The time ages are shown against: the store's, else this machine's.
    pub(crate) fn now_or_local(&self) -> u64 {
        self.now
            .clone()
            .unwrap_or_else(|_| super::time::local_now_ms())
    }

    /// Job `id`'s liveness in `state`: its lease read from the store (only for a transient
    /// state: a resting one holds none).
    pub(crate) fn of(&self, store: &dyn JobStore, id: &str, state: JobState) -> Liveness {
        if state.is_resting() {
            return Liveness::Resting;
        }
        let now = match &self.now {
            Ok(now) => *now,
            Err(e) => {
                return Liveness::Unknown {
                    why: format!("the store's clock did not answer: {e}"),
                };
            }
        };
        let lease = match store.lease(id) {
            Ok(lease) => lease,
            Err(e) => {
                return Liveness::Unknown {
                    why: format!("its lease could not be read: {e}"),
                };
            }
        };
        let Some(lease) = lease else {
            return Liveness::Stale {
                runner: None,
                why: format!(
                    "no runner holds it in {state}: the lease was handed back; the next \
                     runner's claim takes it up"
                ),
            };
        };
        if !lease.live_at(now) {
            return Liveness::Stale {
                why: format!(
                    "its lease expired {} ago by the store's clock; the next runner's claim \
                     recovers it",
                    span(now - lease.until_ms)
                ),
                runner: Some(lease.runner),
            };
        }
        let row = match &self.runners {
            Ok(rows) => rows.iter().find(|r| r.runner == lease.runner),
            Err(_) => None,
        };
        match row {
            Some(r) if r.stale(now) => Liveness::Stale {
                why: format!(
                    "its runner has been silent for {}, past its ttl of {}",
                    span(now.saturating_sub(r.beat_ms)),
                    span(r.ttl_ms)
                ),
                runner: Some(lease.runner),
            },
            _ => Liveness::Live {
                beat_age_ms: row.map(|r| now.saturating_sub(r.beat_ms)),
                until_ms: lease.until_ms,
                runner: lease.runner,
            },
        }
    }
}

impl Liveness {
    /// The runner it names, live or not.
    pub(crate) fn runner(&self) -> Option<&str> {
        match self {
            Liveness::Live { runner, .. } => Some(runner),
            Liveness::Stale { runner, .. } => runner.as_deref(),
            Liveness::Resting | Liveness::Unknown { .. } => None,
        }
    }

    /// As a table cell's content: the runner and its heartbeat age, or a badge that says
    /// why nobody is (known to be) working on it.
    pub(crate) fn cell(&self) -> String {
        let mut out = String::new();
        match self {
            Liveness::Resting => out.push_str("<span class=\"none\">—</span>"),
            Liveness::Live {
                runner,
                beat_age_ms,
                ..
            } => {
                let beat = beat_age_ms.map_or_else(
                    || "heartbeat unknown".to_string(),
                    |a| format!("beat {} ago", span(a)),
                );
                w!(
                    out,
                    "<span class=\"badge live\">live</span> <code>{}</code> <small>{beat}</small>",
                    Esc(runner)
                );
            }
            Liveness::Stale { runner, why } => {
                w!(
                    out,
                    "<span class=\"badge stale\" title=\"{}\">stale</span>",
                    Esc(why)
                );
                if let Some(r) = runner {
                    w!(out, " <code>{}</code>", Esc(r));
                }
                w!(out, " <small>{}</small>", Esc(why));
            }
            Liveness::Unknown { why } => w!(
                out,
                "<span class=\"badge unknown\" title=\"{0}\">unknown</span> <small>{0}</small>",
                Esc(why)
            ),
        }
        out
    }
}
