//! A human's verb that leaves a job needing a human again — a land that failed (INTERVENTION
//! REQUIRED), a resubmit or resume whose job the core sends there — is told like a runner's
//! transition: by the process that made the move, once (the store's claim), before that
//! process ends.

use super::Notifier;
use crate::config::NotifyDef;
use crate::job::store::JobStore;
use std::sync::Arc;

impl Notifier {
    /// After a verb given by `actor` moved job `id`: if its latest transition entered a state
    /// that needs a human, its event is claimed and sent, and this waits for the delivery.
    /// Must run inside a tokio runtime.
    pub async fn after_verb(self: &Arc<Self>, id: &str) {
        let store = Arc::clone(&self.store);
        let id = id.to_string();
        let found = tokio::task::spawn_blocking(move || {
            let job = store.get(&id)?;
            let last = store.history(&job.id)?.pop();
            Ok::<_, crate::job::store::JobStoreError>((job, last))
        })
        .await;
        match found {
            Ok(Ok((job, Some(t)))) => {
                self.entered(&job, &t);
                self.drain().await;
            }
            Ok(Ok((_, None))) => {}
            Ok(Err(e)) => tracing::warn!("notify: {e}"),
            Err(e) => tracing::warn!("notify: {e}"),
        }
    }
}

/// [`Notifier::after_verb`] from a command that has no runtime: `def`'s sinks, the claim in
/// `store` under `actor`'s name. Blocking; nothing when `def` has no sink.
pub fn after_verb(def: &NotifyDef, actor: &str, store: Arc<dyn JobStore>, id: &str) {
    let Some(n) = Notifier::new(def, &format!("verb by {actor}"), store) else {
        return;
    };
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(n.after_verb(id)),
        Err(e) => tracing::warn!("notify: cannot start a runtime: {e}"),
    }
}
