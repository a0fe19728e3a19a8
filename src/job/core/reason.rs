//! Why a job moved, typed: what the core knew when it moved the job (a human's verb, a
//! session's end, a failure and its retries, the policy's judgement), so that a dashboard or a
//! policy can tell cases apart without reading sentences. Shown in words ([`fmt::Display`],
//! the sentences `job show` prints); stored as both (`reason`, the words; `cause`, this).

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a job moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum JobReason {
    /// A human's verb.
    Verb {
        /// The verb (`approve`, `reject`, …).
        verb: String,
        /// Who gave it.
        actor: String,
        /// A reject's critique.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
    /// `job create` made it.
    Created {
        /// Who.
        actor: String,
    },
    /// oneshot rewrote a legacy state (seed 001's migration table).
    Migrated {
        /// The legacy state's name.
        from: String,
        /// The table's why.
        why: String,
    },
    /// The runner died mid-step: its lease expired and another runner reclaimed the job.
    LeaseExpired,
    /// The session ended: on its own merits (to be harvested), or not (to be recovered).
    SessionEnded {
        /// The session.
        session: String,
        /// How: its final state (`COMPLETED`, `INTERRUPTED`, …) or `NOT_STARTED`.
        outcome: String,
        /// Why, when it ended short of its own merits.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    /// Recovery goes on with a new session.
    NewSession,
    /// Recovery goes on with the session the failed execution left.
    Continuing {
        /// The session.
        session: String,
    },
    /// Recovery found the session only in the store: it ran on another machine, whose
    /// runner stopped; a fresh conversation starts from what the store holds.
    FreshConversation {
        /// The session that ran elsewhere.
        session: String,
        /// The runner that ran it.
        runner: String,
    },
    /// Recovery found the session had ended; its end is harvested.
    HadEnded {
        /// The session.
        session: String,
    },
    /// Something failed: the workspace could not be made or harvested, the session left
    /// behind could not be read, a step was reclaimed with nothing to harvest.
    Failed {
        /// What failed, in words (`harvest failed: …`).
        error: String,
    },
    /// A transient failure's retries are spent.
    GaveUp {
        /// The last failure.
        failure: Box<JobReason>,
        /// How many retries were made.
        retries: u32,
    },
    /// HARVESTING's outcome, judged: the policy's answer within Rust's bounds.
    Judged {
        /// Why, in the judge's words (the hook's reason, the bound that overruled it, the
        /// built-in rule's default).
        why: String,
    },
    /// A land did not land (`job land`): the evidence; the base is untouched.
    LandFailed {
        /// What went wrong, with the files or the check.
        failure: crate::job::land::LandFailure,
    },
    /// Words only: a record written before reasons were typed.
    Said {
        /// The words.
        text: String,
    },
}

impl fmt::Display for JobReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobReason::Verb {
                verb,
                actor,
                feedback: Some(critique),
            } if verb == "reject" => write!(f, "rejected by {actor}: {critique}"),
            JobReason::Verb { verb, actor, .. } => write!(f, "{verb} by {actor}"),
            JobReason::Created { actor } => write!(f, "created by {actor}"),
            JobReason::Migrated { from, why } => {
                write!(f, "migrated from {from} (seed 001 migration table): {why}")
            }
            JobReason::LeaseExpired => f.write_str("its runner died mid-step (the lease expired)"),
            JobReason::SessionEnded {
                session,
                outcome,
                why,
            } => {
                write!(f, "session {session} ended {outcome}")?;
                match why {
                    Some(w) => write!(f, ": {w}"),
                    None => Ok(()),
                }
            }
            JobReason::NewSession => f.write_str("starting a new session"),
            JobReason::Continuing { session } => write!(f, "continuing session {session}"),
            JobReason::FreshConversation { session, runner } => write!(
                f,
                "session {session} ran on another machine (runner {runner}), and its \
                 conversation stayed there: a fresh session starts from what the store holds \
                 (the job's branch, its history, the earlier session's records)"
            ),
            JobReason::HadEnded { session } => {
                write!(f, "session {session} had ended; its end is harvested")
            }
            JobReason::Failed { error } => f.write_str(error),
            JobReason::GaveUp { failure, retries } => {
                write!(f, "{failure} (gave up after {retries} retries)")
            }
            JobReason::Judged { why } => f.write_str(why),
            JobReason::LandFailed { failure } => write!(f, "{failure}"),
            JobReason::Said { text } => f.write_str(text),
        }
    }
}

impl JobReason {
    /// A failure in words.
    pub fn failed(error: impl Into<String>) -> JobReason {
        JobReason::Failed {
            error: error.into(),
        }
    }

    /// The reason as stored: the words, and the typed cause unless it is only words.
    pub(crate) fn stored(reason: Option<&JobReason>) -> (Option<String>, Option<JobReason>) {
        match reason {
            None => (None, None),
            Some(JobReason::Said { text }) => (Some(text.clone()), None),
            Some(r) => (Some(r.to_string()), Some(r.clone())),
        }
    }

    /// The reason read back: the typed cause, else the words of an older record.
    pub(crate) fn read(words: Option<String>, cause: Option<JobReason>) -> Option<JobReason> {
        cause.or_else(|| words.map(|text| JobReason::Said { text }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_the_sentences_people_read_and_the_cause_survives_a_round_trip() {
        let r = JobReason::GaveUp {
            failure: Box::new(JobReason::SessionEnded {
                session: "s1".into(),
                outcome: "INTERRUPTED".into(),
                why: Some("stopped".into()),
            }),
            retries: 2,
        };
        assert_eq!(
            r.to_string(),
            "session s1 ended INTERRUPTED: stopped (gave up after 2 retries)"
        );
        let (words, cause) = JobReason::stored(Some(&r));
        let json = serde_json::to_value(&cause).unwrap();
        assert_eq!(json["kind"], "gave_up");
        let back = JobReason::read(words, serde_json::from_value(json).unwrap());
        assert_eq!(back, Some(r));
        // An older record: words only.
        assert_eq!(
            JobReason::read(Some("approve by ana".into()), None).map(|r| r.to_string()),
            Some("approve by ana".to_string())
        );
        let reject = JobReason::Verb {
            verb: "reject".into(),
            actor: "ana".into(),
            feedback: Some("too slow".into()),
        };
        assert_eq!(reject.to_string(), "rejected by ana: too slow");
    }
}
