//! `oneshot prune --older-than D [--dry-run]`: remove old finished sessions.

use super::show::{one_line, rfc3339};
use super::term::short_id;
use anyhow::Result;
use oneshot::error::failure;
use oneshot::store::{PruneOptions, Store};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Removes COMPLETED, FAILED and REJECTED sessions last updated more than `older_than` ago
/// (see `Store::prune`), printing each; `dry_run` only prints them.
pub fn prune(store: &Store, older_than: Duration, dry_run: bool) -> Result<i32> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let before_ms = u64::try_from(now.saturating_sub(older_than).as_millis()).unwrap_or(0);
    let (pruned, kept) = store.prune(PruneOptions { before_ms, dry_run })?;
    let verb = if dry_run { "would remove" } else { "removed" };
    for p in &pruned {
        let s = &p.summary;
        outln!(
            "{verb}  {}  {:<9}  {}  {}",
            short_id(&s.id),
            s.state.as_str(),
            rfc3339(s.updated_ms),
            one_line(&s.task, 60)
        );
    }
    for k in &kept {
        errln!(
            "oneshot: warning: kept session {}: {}",
            k.id,
            failure(&k.error)
        );
    }
    let cutoff = rfc3339(before_ms);
    if pruned.is_empty() {
        errln!(
            "nothing to prune: no COMPLETED, FAILED or REJECTED session last updated before \
             {cutoff} under {}",
            store.root().display()
        );
    } else {
        outln!(
            "{verb} {} session(s) last updated before {cutoff}",
            pruned.len()
        );
    }
    Ok(0)
}
