//! Notifications of needs-a-human events — a job awaiting approval, a job needing an
//! intervention, an agent that stalled, a session at 80 % of a budget — sent to the sinks of
//! `[notify]` in oneshot.toml (a command, an `http://` webhook), each event once, with a link
//! to the job's page on the dashboard.
//!
//! **Who sends.** The process that makes the move: a runner, right after the store accepted
//! its write (the job entered APPROVAL_REQUIRED or INTERVENTION_REQUIRED), or while it runs a
//! session that stalled or reached 80 % of a budget; a human's verb whose write leaves a job
//! needing a human (a `land` that failed) is sent by the command that gave it. Nobody polls:
//! an event is seen where it happens. The one place that decides what is an event and how it
//! is sent is this module; the runner calls [`Notifier::entered`] from the one place its
//! transitions commit, and [`Notifier::session`] from its session observer.
//!
//! **Once.** Before sending, the sender claims the event in the store: a row keyed by (job,
//! kind, cause), inserted if absent ([`crate::job::store::Notifications::claim_notification`]) —
//! the cause being what made it (the number of the transition that entered the state, the
//! session, iteration and role of a stall). Only the process whose insert took effect sends;
//! another runner, or this one restarted, finds the row and sends nothing. A runner that
//! starts also looks for jobs resting in a needs-a-human state whose entering transition has
//! no row yet ([`Notifier::sweep`]) — a runner that died between its write and its claim — and
//! claims those the same way. Delivery is at most once per claim: a failed attempt is retried
//! with a growing pause ([`ATTEMPTS`] in all per sink), and the outcome — sent, or failed with
//! the error and the attempts — is written back to the row; a sender that dies mid-delivery
//! leaves the row `sending`.
//!
//! **The policy's say.** Before an event is claimed, the job's policy is asked through its
//! `on_notify(ctx)` hook (`hook`): send it as it is, send it with fields added to its `extra`,
//! or suppress it — the row is then written `suppressed`, naming the policy and its reason, and
//! nothing is sent. The hook fails open: when it (or the policy) fails, the event is sent as
//! it is and the row carries the warning.
//!
//! Every payload passes the job's redactor before it is stored or sent.

mod command;
mod hook;
mod kind;
mod verb;
mod webhook;

pub use kind::NotifyKind;
pub use verb::after_verb;
pub use webhook::{WebhookTarget, webhook_target};

use crate::config::{NotifyDef, SinkDef, SinkTo};
use crate::engine::Update;
use crate::job::JobState;
use crate::job::record::{Job, Transition};
use crate::job::store::{JobStore, NotificationRecord, NotifyOutcome, NotifyStatus};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Attempts per sink before a delivery is recorded failed.
pub const ATTEMPTS: u32 = 3;

/// The pause before the second attempt; it doubles before each next one.
pub const FIRST_PAUSE: Duration = Duration::from_millis(500);

/// What a sink receives (as JSON): what happened to which job, and where to look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// What happened.
    pub kind: NotifyKind,
    /// The job's id.
    pub job: String,
    /// The task's first line.
    pub title: String,
    /// The job's state when it happened.
    pub state: JobState,
    /// Why, in words.
    pub reason: Option<String>,
    /// When (ms since the epoch).
    pub at_ms: u64,
    /// When, RFC 3339.
    pub at: String,
    /// The job's page: `<link-base>/jobs/<id>`, when `notify.link-base` is set.
    pub link: Option<String>,
    /// What caused it, unique per job and kind (`transition 7`).
    pub cause: String,
    /// What the policy's `on_notify` added.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Sends the events of `[notify]` for one process (a runner, a command).
pub struct Notifier {
    sinks: Vec<SinkDef>,
    link_base: Option<String>,
    /// Where a command sink runs: the config file's directory.
    dir: PathBuf,
    /// Who claims: written in each row.
    sender: String,
    store: Arc<dyn JobStore>,
    /// Deliveries under way, for [`Notifier::drain`].
    pending: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("sinks", &self.sinks)
            .field("sender", &self.sender)
            .finish_non_exhaustive()
    }
}

impl Notifier {
    /// A notifier for `def`, claiming in `store` as `sender`; `None` when it has no sink.
    pub fn new(def: &NotifyDef, sender: &str, store: Arc<dyn JobStore>) -> Option<Arc<Notifier>> {
        if def.sinks.is_empty() {
            return None;
        }
        Some(Arc::new(Notifier {
            sinks: def.sinks.clone(),
            link_base: def.link_base.clone(),
            dir: def.dir.clone(),
            sender: sender.to_string(),
            store,
            pending: Mutex::new(Vec::new()),
        }))
    }

    /// The job's page, when the dashboard's address is known.
    pub fn link(&self, job: &str) -> Option<String> {
        self.link_base
            .as_ref()
            .map(|base| format!("{base}/jobs/{job}"))
    }

    /// A transition of `job` was written: when it entered a state that needs a human, its
    /// event is claimed and sent (in the background: [`Notifier::drain`] waits for it).
    /// Call it only once the store accepted the write.
    pub fn entered(self: &Arc<Self>, job: &Job, transition: &Transition) {
        let Some(kind) = NotifyKind::of_state(transition.to) else {
            return;
        };
        let me = Arc::clone(self);
        let (id, t) = (job.id.clone(), transition.clone());
        self.spawn(async move {
            let seen = t.clone();
            let found = me
                .blocking(move |s| {
                    let job = s.get(&id)?;
                    let seq = entering_seq(&s.history(&id)?, &seen);
                    Ok((job, seq))
                })
                .await;
            match found {
                Ok((job, Some(seq))) => {
                    let reason = t.reason.as_ref().map(ToString::to_string);
                    me.send(
                        &job,
                        kind,
                        t.to,
                        reason,
                        t.at_ms,
                        format!("transition {seq}"),
                    )
                    .await;
                }
                Ok((_, None)) => {}
                Err(e) => tracing::warn!("notify: {e}"),
            }
        });
    }

    /// An update of session `session`, run by job `job`'s step: an agent stopped for its
    /// inactivity timeout, or a session's first warning of 80 % of a budget, is sent.
    pub fn session(self: &Arc<Self>, job: &str, session: &str, update: &Update) {
        let Some((kind, cause, reason)) = session_event(session, update) else {
            return;
        };
        let me = Arc::clone(self);
        let id = job.to_string();
        self.spawn(async move {
            let now = crate::pipeline::now_ms();
            match me.blocking(move |s| s.get(&id)).await {
                Ok(job) => {
                    let state = job.state();
                    me.send(&job, kind, state, Some(reason), now, cause).await;
                }
                Err(e) => tracing::warn!("notify: {e}"),
            }
        });
    }

    /// Claims and sends the events of jobs that rest in a state needing a human and whose
    /// entering transition was never claimed: a sender that died between its write and its
    /// claim. A runner calls it when it starts.
    pub fn sweep(self: &Arc<Self>) {
        let me = Arc::clone(self);
        self.spawn(async move {
            let found = me
                .blocking(|s| {
                    let mut out = Vec::new();
                    for state in [JobState::ApprovalRequired, JobState::InterventionRequired] {
                        let filter = crate::job::store::ListFilter { state: Some(state) };
                        for summary in s.list(&filter)? {
                            let history = s.history(&summary.id)?;
                            let Some(seq) = history.iter().rposition(|t| t.to == state) else {
                                continue;
                            };
                            let claimed = s
                                .notifications(Some(&summary.id))?
                                .iter()
                                .any(|n| n.cause == format!("transition {}", seq + 1));
                            if !claimed {
                                out.push((s.get(&summary.id)?, history[seq].clone(), seq + 1));
                            }
                        }
                    }
                    Ok(out)
                })
                .await;
            match found {
                Ok(found) => {
                    for (job, t, seq) in found {
                        let Some(kind) = NotifyKind::of_state(t.to) else {
                            continue;
                        };
                        let reason = t.reason.as_ref().map(ToString::to_string);
                        me.send(
                            &job,
                            kind,
                            t.to,
                            reason,
                            t.at_ms,
                            format!("transition {seq}"),
                        )
                        .await;
                    }
                }
                Err(e) => tracing::warn!("notify: looking for unsent events: {e}"),
            }
        });
    }

    /// Waits for every delivery under way (a runner calls it before it exits: a notification
    /// claimed is a notification sent, or recorded failed).
    pub async fn drain(&self) {
        loop {
            let next = self.pending.lock().unwrap_or_else(|p| p.into_inner()).pop();
            match next {
                Some(task) => {
                    let _ = task.await;
                }
                None => return,
            }
        }
    }

    fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|t| !t.is_finished());
        pending.push(tokio::spawn(task));
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn JobStore) -> Result<T, crate::job::store::JobStoreError> + Send + 'static,
    ) -> Result<T, crate::job::store::JobStoreError> {
        let store = Arc::clone(&self.store);
        match tokio::task::spawn_blocking(move || f(&*store)).await {
            Ok(out) => out,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    /// Claims the event and, when this claim took effect, delivers it and records how that
    /// went.
    async fn send(
        &self,
        job: &Job,
        kind: NotifyKind,
        state: JobState,
        reason: Option<String>,
        at_ms: u64,
        cause: String,
    ) {
        let mut event = Event {
            kind,
            job: job.id.clone(),
            title: job
                .spec
                .task
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string(),
            state,
            reason,
            at_ms,
            at: humantime::format_rfc3339_millis(
                std::time::UNIX_EPOCH + Duration::from_millis(at_ms),
            )
            .to_string(),
            link: self.link(&job.id),
            cause: cause.clone(),
            extra: serde_json::Map::new(),
        };
        // The policy's say comes first, so that the record holds what is sent (its `extra`);
        // every runner that sees the event asks, only the one whose claim takes effect sends.
        let policy = job.spec.policy.clone();
        let (event, said) = match tokio::task::spawn_blocking(move || {
            let said = hook::ask(policy.as_deref(), &mut event);
            (event, said)
        })
        .await
        {
            Ok(out) => out,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        let redactor = crate::job::redactor(job.spec.policy.as_deref());
        let record = NotificationRecord {
            job: job.id.clone(),
            kind: kind.as_str().to_string(),
            cause: cause.clone(),
            event: serde_json::to_value(&event).unwrap_or_default(),
            sender: self.sender.clone(),
            created_ms: 0,
            status: NotifyStatus::Sending,
            attempts: 0,
            error: None,
            updated_ms: 0,
        };
        let sealed = match redactor.seal(&record) {
            Ok(s) => s,
            Err(e) => return tracing::warn!("notify: job {}: {e}", job.id),
        };
        let body = sealed.get().event.to_string();
        let claimed = self.blocking(move |s| s.claim_notification(&sealed)).await;
        match claimed {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => return tracing::warn!("notify: job {}: {e}", job.id),
        }
        let outcome = match said {
            hook::Said::Suppress { why } => {
                tracing::info!("notify: job {}: {kind} {why}", job.id);
                NotifyOutcome {
                    job: job.id.clone(),
                    kind: kind.as_str().to_string(),
                    cause,
                    status: NotifyStatus::Suppressed,
                    attempts: 0,
                    error: Some(why),
                }
            }
            hook::Said::Send { warning } => {
                if let Some(w) = &warning {
                    tracing::warn!("notify: job {}: {w}", job.id);
                }
                let (attempts, errors) = self.deliver(kind, &event, &body).await;
                let status = if errors.is_empty() {
                    NotifyStatus::Sent
                } else {
                    NotifyStatus::Failed
                };
                let said: Vec<String> = warning.into_iter().chain(errors).collect();
                NotifyOutcome {
                    job: job.id.clone(),
                    kind: kind.as_str().to_string(),
                    cause,
                    status,
                    attempts,
                    error: (!said.is_empty()).then(|| said.join("; ")),
                }
            }
        };
        let written = match redactor.seal(&outcome) {
            Ok(sealed) => {
                self.blocking(move |s| s.notification_outcome(&sealed))
                    .await
            }
            Err(e) => return tracing::warn!("notify: job {}: {e}", job.id),
        };
        if let Err(e) = written {
            tracing::warn!("notify: job {}: {e}", job.id);
        }
    }

    /// Delivers `body` to every sink that takes `kind`, each tried up to [`ATTEMPTS`] times:
    /// the attempts made, and each sink's last error.
    async fn deliver(&self, kind: NotifyKind, event: &Event, body: &str) -> (u32, Vec<String>) {
        let mut attempts = 0;
        let mut errors = Vec::new();
        for (n, sink) in self.sinks.iter().enumerate().filter(|(_, s)| s.takes(kind)) {
            let mut pause = FIRST_PAUSE;
            for attempt in 1..=ATTEMPTS {
                attempts += 1;
                match self.once(sink, event, body).await {
                    Ok(()) => break,
                    Err(e) if attempt == ATTEMPTS => {
                        errors.push(format!(
                            "sink {} (line {}) failed {ATTEMPTS} times; last: {e}",
                            n + 1,
                            sink.line
                        ));
                    }
                    Err(_) => {
                        tokio::time::sleep(pause).await;
                        pause *= 2;
                    }
                }
            }
        }
        (attempts, errors)
    }

    async fn once(&self, sink: &SinkDef, event: &Event, body: &str) -> Result<(), String> {
        match &sink.to {
            SinkTo::Command(line) => {
                let state = event.state.as_str();
                let link = event.link.clone().unwrap_or_default();
                let vars = [
                    ("ONESHOT_NOTIFY_KIND", event.kind.as_str()),
                    ("ONESHOT_NOTIFY_JOB", event.job.as_str()),
                    ("ONESHOT_NOTIFY_STATE", state),
                    ("ONESHOT_NOTIFY_LINK", link.as_str()),
                ];
                command::run(line, &self.dir, body, &vars, sink.timeout).await
            }
            SinkTo::Webhook(url) => {
                let target = webhook_target(url)?;
                webhook::post(&target, body.to_string(), sink.timeout).await
            }
        }
    }
}

/// The number (1-based) of the transition in `history` that is `t` — the last that entered
/// `t.to` at `t.at_ms` by `t.by`.
fn entering_seq(history: &[Transition], t: &Transition) -> Option<usize> {
    history
        .iter()
        .rposition(|h| h.to == t.to && h.at_ms == t.at_ms && h.by == t.by)
        .map(|i| i + 1)
}

/// The needs-a-human event a session's update is, if it is one: its kind, its cause and why.
pub fn session_event(session: &str, update: &Update) -> Option<(NotifyKind, String, String)> {
    match update {
        Update::Transition {
            iteration,
            reason:
                Some(
                    r @ crate::session::Reason::TimedOut {
                        role,
                        why: crate::process::StopReason::InactivityTimeout,
                    },
                ),
            ..
        } => Some((
            NotifyKind::AgentStalled,
            format!("session {session} iteration {iteration} {role}"),
            r.to_string(),
        )),
        // The session warns once at 80 % of a budget (then at 95 %); the words are its
        // (`crate::session`'s agent_usage).
        Update::Warning(text)
            if text.starts_with("80% of the ") && text.contains("(limits.budget)") =>
        {
            Some((
                NotifyKind::Budget80,
                format!("session {session}"),
                text.clone(),
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_s_first_budget_warning_and_an_inactivity_stop_are_events() {
        // The words of the session's warning (`crate::session`'s agent_usage).
        let warn =
            Update::Warning("80% of the usd budget is used: 0.8 of 1 (limits.budget)".to_string());
        let (kind, cause, _) = session_event("s1", &warn).unwrap();
        assert_eq!((kind, cause.as_str()), (NotifyKind::Budget80, "session s1"));
        let later =
            Update::Warning("95% of the usd budget is used: 0.95 of 1 (limits.budget)".to_string());
        assert!(session_event("s1", &later).is_none(), "80 % only");
        let stop = Update::Transition {
            session_id: "s1".into(),
            from: crate::machine::SessionState::WorkerExecuting,
            to: crate::machine::SessionState::RecoveryPending,
            iteration: 2,
            max_iterations: 5,
            reason: Some(crate::session::Reason::TimedOut {
                role: crate::process::Role::Worker,
                why: crate::process::StopReason::InactivityTimeout,
            }),
        };
        let (kind, cause, _) = session_event("s1", &stop).unwrap();
        assert_eq!(
            (kind, cause.as_str()),
            (NotifyKind::AgentStalled, "session s1 iteration 2 worker")
        );
        assert!(session_event("s1", &Update::Note("reloaded".into())).is_none());
    }
}
