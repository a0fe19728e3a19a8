//! An open stream stays as authorised as a new request would be: each stream names the token
//! or browser session it was opened with, and when the store changes (a revocation and a
//! sign-out are writes like any other, heard as any other) the hub asks the store again about
//! each — at most every [`EVERY`] — and ends the streams of those no longer good with
//! `event: signedout`. While the store is quiet nothing is asked but at the hub's
//! once-a-minute safety read ([`super::hub`]).

use crate::job::store::JobStore;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The least time between two checks of the open streams' credentials.
pub(crate) const EVERY: Duration = Duration::from_secs(2);

/// What a stream was opened with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Credential {
    /// A bearer token.
    Bearer(String),
    /// A browser session's cookie.
    Cookie(String),
}

impl Credential {
    /// Whether the store still lets it in (a store that cannot say keeps it: the stream
    /// ends at its next reconnect if it is not).
    fn good(&self, store: &dyn JobStore) -> bool {
        let found = match self {
            Credential::Bearer(b) => crate::token::check(store, b),
            Credential::Cookie(c) => crate::token::session(store, c),
        };
        !matches!(found, Ok(None))
    }
}

/// One open stream's credential, and the word that it is no longer good.
pub(crate) struct Watch {
    credential: Credential,
    ended: AtomicBool,
    /// Told once when the credential is found no longer good.
    pub gone: tokio::sync::Notify,
}

impl Watch {
    /// A watch of `credential`.
    pub(crate) fn new(credential: Credential) -> Arc<Watch> {
        Arc::new(Watch {
            credential,
            ended: AtomicBool::new(false),
            gone: tokio::sync::Notify::new(),
        })
    }
}

/// Checks each open stream's credential once (one store read per distinct credential) and
/// tells those that are no longer good; keeps the watches of streams still open.
pub(crate) fn recheck(store: &dyn JobStore, watches: &mut Vec<Weak<Watch>>) {
    watches.retain(|w| w.strong_count() > 0);
    let mut verdicts: std::collections::HashMap<Credential, bool> = Default::default();
    for w in watches.iter().filter_map(Weak::upgrade) {
        if w.ended.load(Ordering::Relaxed) {
            continue;
        }
        let good = *verdicts
            .entry(w.credential.clone())
            .or_insert_with(|| w.credential.good(store));
        if !good {
            w.ended.store(true, Ordering::Relaxed);
            w.gone.notify_one();
        }
    }
}
