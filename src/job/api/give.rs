//! The front door of a human's verbs: [`give`] reads the job and what the verb needs from the
//! store, asks the core ([`crate::job::verbs::apply`]), and writes its
//! [`crate::job::step::JobEffect::Decide`] through the job's redactor with
//! [`crate::job::store::Jobs::decide`], which writes it only if the job has not moved. Who
//! acts ([`actor`]) and the policy's hash are read here, never in the core.

use crate::job::core::verbs::{Seen, VerbContext, VerbError, judge};
use crate::job::record::Job;
use crate::job::step::VerbWrite;
use crate::job::{JobState, JobTrigger};

/// Who is acting: `$ONESHOT_ACTOR`, else the OS user (`$USER`, else the uid's name), else
/// `unknown`.
pub fn actor() -> String {
    let set = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    set("ONESHOT_ACTOR")
        .or_else(|| set("USER"))
        .or_else(|| set("LOGNAME"))
        .or_else(|| {
            nix::unistd::User::from_uid(nix::unistd::getuid())
                .ok()
                .flatten()
                .map(|u| u.name)
        })
        .unwrap_or_else(|| "unknown".into())
}

/// What [`give`] needs besides the job and the verb.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Giving {
    /// The actor ([`actor`] for the user running oneshot).
    pub actor: String,
    /// `reject`'s critique.
    pub feedback: Option<String>,
    /// Now, ms since the epoch.
    pub now_ms: u64,
}

/// A verb given: where the job was, and the job as the verb left it (as written).
#[derive(Debug, Clone, PartialEq)]
pub struct Given {
    /// The state the verb was judged against.
    pub from: JobState,
    /// The job now.
    pub job: Job,
}

/// Why [`give`] wrote nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GiveError {
    /// The verb does not apply (the state does not allow it, a reject without feedback).
    #[error(transparent)]
    Verb(#[from] VerbError),
    /// The store refused or failed (no such job, it moved meanwhile, a runner holds it).
    #[error(transparent)]
    Store(#[from] crate::job::store::JobStoreError),
    /// What would be written could not go through the redactor.
    #[error("redact what job {id} writes: {source}")]
    Seal {
        /// The job.
        id: String,
        /// Why.
        source: crate::redact::SealError,
    },
}

/// Gives `verb` to job `id` (an id or unique prefix) in `store`: reads the job and its latest
/// artifact (what a reject's PREVIOUS ATTEMPT shows, what an approve confirms), judges the verb
/// ([`apply`](crate::job::verbs::apply)), and writes the move with its audit entry through the job's redactor — only if
/// the job has not moved meanwhile and no runner holds it, except `cancel`, which takes a job
/// from a runner mid-step (its lease is revoked; the runner's next heartbeat fails and it stops
/// the session).
pub fn give(
    store: &dyn crate::job::store::JobStore,
    id: &str,
    verb: JobTrigger,
    giving: &Giving,
) -> Result<Given, GiveError> {
    give_seen(store, id, verb, giving, None)
}

/// [`give`], bound to what the human saw when `seen` is given: refused
/// ([`VerbError::Stale`], nothing written) when the job read for the verb is not what they saw
/// — and the write, as every verb's, happens only if the job is still in that state. (A job
/// would have to leave the state and come back between this read and the write, within
/// milliseconds, for the two to differ; its steps are checked on the job as read.)
pub fn give_seen(
    store: &dyn crate::job::store::JobStore,
    id: &str,
    verb: JobTrigger,
    giving: &Giving,
    seen: Option<&Seen>,
) -> Result<Given, GiveError> {
    let job = store.get(id)?;
    let latest = store.artifacts(&job.id)?.pop();
    if let Some(seen) = seen {
        seen.still(&job, latest.as_ref().map(|a| a.diff_hash.as_str()))?;
    }
    let cx = VerbContext {
        actor: giving.actor.clone(),
        now_ms: giving.now_ms,
        feedback: giving.feedback.clone(),
        previous: latest.as_ref().map(|a| {
            let stat = match a.diff_stat.trim() {
                "" => "no changes",
                stat => stat,
            };
            match a.final_message.trim() {
                "" => format!("(the worker said nothing; diff: {stat})"),
                said => format!("{said}\n(diff: {stat})"),
            }
        }),
        diff_hash: latest.as_ref().map(|a| a.diff_hash.clone()),
        policy_hash: policy_hash(&job),
    };
    write(store, &job, verb, &cx)?;
    Ok(Given {
        from: job.state(),
        job: store.get(&job.id)?,
    })
}

/// Judges `verb` on `job` ([`apply`]) and writes it through the job's redactor, only if the
/// job is still where it was judged — `cancel` taking a job from a runner mid-step (its lease
/// is revoked; the runner's next heartbeat fails and it stops the session).
pub(in crate::job) fn write(
    store: &dyn crate::job::store::JobStore,
    job: &Job,
    verb: JobTrigger,
    cx: &VerbContext,
) -> Result<(), GiveError> {
    let (moved, d) = judge(job, verb, cx)?;
    decide(store, job, &moved, &d)
}

/// Writes what the core decided about `job` (a verb's move, a land) through the job's
/// redactor, only if the job is still where it was judged.
pub(in crate::job) fn decide(
    store: &dyn crate::job::store::JobStore,
    job: &Job,
    moved: &Job,
    d: &VerbWrite,
) -> Result<(), GiveError> {
    let redactor = crate::job::redactor(job.spec.policy.as_deref());
    let seal = |source| GiveError::Seal {
        id: job.id.clone(),
        source,
    };
    let transition = match &d.transition {
        Some(t) => Some(redactor.seal(t).map_err(seal)?),
        None => None,
    };
    store.decide(&crate::job::store::Decision {
        job: &redactor.seal(moved).map_err(seal)?,
        expected: d.expected,
        transition: transition.as_ref(),
        audit: &redactor.seal(&d.audit).map_err(seal)?,
        revoke: d.revoke,
    })?;
    Ok(())
}

/// The hash of the job's policy as it is now (the file, or the built-in), for the audit trail:
/// which policy version the human confirmed or overruled. `None` when it no longer loads.
pub fn policy_hash(job: &Job) -> Option<String> {
    use crate::policy::{PolicyHost, PolicyOptions};
    PolicyHost::load_or_builtin(job.spec.policy.as_deref(), PolicyOptions::default())
        .ok()
        .map(|h| h.hash().to_string())
}
