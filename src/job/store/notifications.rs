//! What the store keeps of each notification (`crate::notify`): one row per event, keyed by
//! (job, kind, cause) — the cause is what made the event, such as the number of the transition
//! that entered APPROVAL_REQUIRED — so that an event is sent once however many runners see it
//! and however often one restarts. The row is inserted if absent before anything is sent:
//! only the writer whose insert took effect sends, and it writes the outcome back.

use super::JobStoreError;
use crate::redact::Redacted;
use serde::{Deserialize, Serialize};

/// Where a notification's delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NotifyStatus {
    /// Claimed by its sender, being delivered (or its sender died meanwhile).
    Sending,
    /// Every sink that takes it took it.
    Sent,
    /// A sink refused it after every attempt; `error` says why.
    Failed,
    /// The policy's `on_notify` dropped it: nothing was sent.
    Suppressed,
}

impl NotifyStatus {
    /// The word the store's column holds.
    pub const fn as_str(self) -> &'static str {
        match self {
            NotifyStatus::Sending => "sending",
            NotifyStatus::Sent => "sent",
            NotifyStatus::Failed => "failed",
            NotifyStatus::Suppressed => "suppressed",
        }
    }

    /// The status whose word is `word`.
    pub fn from_word(word: &str) -> Option<NotifyStatus> {
        [
            NotifyStatus::Sending,
            NotifyStatus::Sent,
            NotifyStatus::Failed,
            NotifyStatus::Suppressed,
        ]
        .into_iter()
        .find(|s| s.as_str() == word)
    }
}

/// One notification as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotificationRecord {
    /// The job.
    pub job: String,
    /// The event's kind (`"approval_pending"`, see [`crate::notify::NotifyKind`]).
    pub kind: String,
    /// What caused it, unique per (job, kind): `transition 7`, `session S iteration 2 worker`.
    pub cause: String,
    /// The payload sent, as JSON.
    pub event: serde_json::Value,
    /// Who claimed it to send it (a runner's id, `serve`, a user).
    pub sender: String,
    /// When it was claimed (ms since the epoch, the store's clock); assigned by the store.
    #[serde(default)]
    pub created_ms: u64,
    /// Where its delivery stands.
    pub status: NotifyStatus,
    /// Delivery attempts made (over all its sinks).
    #[serde(default)]
    pub attempts: u32,
    /// Why the last attempt failed, when one did; why the policy's `on_notify` suppressed
    /// it (status [`NotifyStatus::Suppressed`]); or the warning of an `on_notify` that failed
    /// open (the event was sent as it was).
    #[serde(default)]
    pub error: Option<String>,
    /// When the status was last written (the store's clock); assigned by the store.
    #[serde(default)]
    pub updated_ms: u64,
}

/// How a notification's delivery ended, written back by its sender.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotifyOutcome {
    /// The job.
    pub job: String,
    /// The kind, as in [`NotificationRecord::kind`].
    pub kind: String,
    /// The cause, as in [`NotificationRecord::cause`].
    pub cause: String,
    /// Sent, failed or suppressed.
    pub status: NotifyStatus,
    /// Attempts made.
    pub attempts: u32,
    /// Why it failed, why it was suppressed, or an `on_notify` warning (as in
    /// [`NotificationRecord::error`]).
    pub error: Option<String>,
}

/// The record of each notification, claimed before it is sent so that it is sent once.
pub trait Notifications: Send + Sync {
    /// Claims a notification to send: inserts its record (status [`NotifyStatus::Sending`],
    /// `created_ms` and `updated_ms` the store's now) unless one with the same (job, kind,
    /// cause) is there. Whether this insert took effect: only then may the caller send it, so
    /// that an event is sent once however many processes see it.
    fn claim_notification(
        &self,
        record: &Redacted<NotificationRecord>,
    ) -> Result<bool, JobStoreError>;

    /// Writes how a claimed notification's delivery ended (`updated_ms` the store's now);
    /// [`JobStoreError::NotFound`] (naming the job) when no such notification was claimed.
    fn notification_outcome(&self, outcome: &Redacted<NotifyOutcome>) -> Result<(), JobStoreError>;

    /// The notifications of one job, or of all, oldest first.
    fn notifications(&self, id: Option<&str>) -> Result<Vec<NotificationRecord>, JobStoreError>;
}
