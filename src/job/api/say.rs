//! Saying something to a job's worker (`oneshot say JOB`, and the dashboard through the same
//! call). A job's session runs on whichever runner holds its lease, in that runner's own state
//! directory — often another machine — so the message is not posted to a session's inbox
//! here: it is written to the job's audit trail in the store every runner shares (redacted,
//! with an id of its own), and the runner that holds the job, now or next, posts it to the
//! session it runs (`crate::job::runner`'s relay). The session's `message` records, shipped
//! back with its journal, say how it went.

use crate::job::JobState;
use crate::job::record::{AuditAction, AuditEntry};
use crate::job::store::{JobStore, JobStoreError, SessionJournal};
use crate::session::{MessageStatus, Said};

/// Why a message was not recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobSayError {
    /// Nothing to say.
    #[error("say to job {id}: the message is empty; give its text (or --file, or - for stdin)")]
    Empty {
        /// The job, as given.
        id: String,
    },
    /// The job has ended: no worker of it will run again.
    #[error(
        "say to job {id}: it has ended ({state}); no worker of it will run again to read the \
         message — create a new job with the message in its task (oneshot job create)"
    )]
    Ended {
        /// The job.
        id: String,
        /// Its terminal state.
        state: JobState,
    },
    /// The store could not read the job or write the message.
    #[error("say to job {id}: {source}")]
    Store {
        /// The job, as given.
        id: String,
        /// What failed.
        #[source]
        source: JobStoreError,
    },
    /// The message could not be redacted (a bug, said as one).
    #[error("say to job {id}: {source}")]
    Seal {
        /// The job.
        id: String,
        /// What failed.
        #[source]
        source: crate::pipeline::SealError,
    },
}

/// A message recorded for a job's worker.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSaid {
    /// The job's full id.
    pub job: String,
    /// Where the job was when it was said.
    pub state: JobState,
    /// The message as recorded (redacted); its id is the one the sessions' `message` records
    /// name.
    pub said: Said,
    /// The runner holding a live lease on the job when it was said: it hands the message to
    /// the session it runs. `None`: no runner holds the job; the first worker prompt of its
    /// next session carries the message.
    pub runner: Option<String>,
}

/// Records `text` from `actor` (`now`: preempt the running turn) in the audit trail of job
/// `id` (an id or unique prefix) as a `message` entry, redacted by the job's redactor. A job
/// that has ended (SUCCESS, CANCELED) refuses it: no worker of it will run again.
pub fn say(
    store: &dyn JobStore,
    id: &str,
    text: &str,
    now: bool,
    actor: &str,
) -> Result<JobSaid, JobSayError> {
    if text.trim().is_empty() {
        return Err(JobSayError::Empty { id: id.to_string() });
    }
    let store_err = |source| JobSayError::Store {
        id: id.to_string(),
        source,
    };
    let job = store.get(id).map_err(store_err)?;
    let state = job.state();
    if state.is_terminal() {
        return Err(JobSayError::Ended { id: job.id, state });
    }
    let message = uuid::Uuid::new_v4().to_string();
    let mut m = serde_json::Map::new();
    m.insert("message".into(), message.clone().into());
    m.insert("text".into(), text.trim_end().into());
    m.insert("now".into(), now.into());
    m.insert("state".into(), state.as_str().into());
    if let Some(session) = job.session() {
        m.insert("session".into(), session.into());
    }
    let entry = AuditEntry::job(
        &job.id,
        AuditAction::Message,
        actor,
        crate::pipeline::now_ms(),
        m,
    );
    let sealed = crate::job::redactor(job.spec.policy.as_deref())
        .seal(&entry)
        .map_err(|source| JobSayError::Seal {
            id: job.id.clone(),
            source,
        })?;
    store.record(&sealed).map_err(store_err)?;
    let said = said_of(sealed.get()).expect("a message entry reads back as a message");
    // Said after the write: a runner that claims the job meanwhile finds the message anyway.
    let runner = match (store.lease(&job.id), store.now_ms()) {
        (Ok(Some(l)), Ok(now_ms)) if l.live_at(now_ms) => Some(l.runner),
        _ => None,
    };
    Ok(JobSaid {
        job: job.id,
        state,
        said,
        runner,
    })
}

/// The message an audit entry records, if it is a `message` entry.
pub fn said_of(entry: &AuditEntry) -> Option<Said> {
    if entry.action != AuditAction::Message {
        return None;
    }
    let m = &entry.metadata;
    Some(Said {
        id: m.get("message")?.as_str()?.to_string(),
        actor: entry.actor.clone(),
        ts: entry.at_ms,
        text: m.get("text")?.as_str()?.to_string(),
        now: m
            .get("now")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        status: MessageStatus::Received,
        taken_ms: None,
        taken_iteration: None,
    })
}

/// The messages of a job's audit trail, oldest first.
pub fn messages(audit: &[AuditEntry]) -> Vec<Said> {
    audit.iter().filter_map(said_of).collect()
}

/// Where each session of the job stands with message `id`, as the shipped journals say:
/// (session, the message as that session holds it), first shipped first.
pub fn sessions_holding(journals: &[SessionJournal], id: &str) -> Vec<(String, Said)> {
    journals
        .iter()
        .filter_map(|j| {
            let s = j.session().ok()?;
            let m = s.messages.into_iter().find(|m| m.id == id)?;
            Some((j.session.clone(), m))
        })
        .collect()
}

/// Whether a worker of some session of the job took message `id` in (mid-run, or in a prompt).
pub fn taken_in(journals: &[SessionJournal], id: &str) -> bool {
    sessions_holding(journals, id)
        .iter()
        .any(|(_, m)| matches!(m.status, MessageStatus::Taken | MessageStatus::InPrompt))
}

/// The job's messages that no worker of any session has taken in yet — what the next session
/// of the job is given, oldest first.
pub fn waiting(audit: &[AuditEntry], journals: &[SessionJournal]) -> Vec<Said> {
    messages(audit)
        .into_iter()
        .filter(|m| !taken_in(journals, &m.id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::record::{Job, JobSpec};
    use crate::job::store::SqliteStore;
    use crate::job::store::prelude::*;

    fn store_with(state: JobState) -> (tempfile::TempDir, SqliteStore, String) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("jobs.db")).unwrap();
        let job = Job::new(
            "job-0000abcd",
            JobSpec::new("t", dir.path(), "cmd:true", "cmd:true"),
            state,
            1,
        );
        let r = crate::job::redactor(None);
        let audit = AuditEntry::job(&job.id, AuditAction::Create, "ann", 1, Default::default());
        store
            .create(&r.seal(&job).unwrap(), &r.seal(&audit).unwrap())
            .unwrap();
        (dir, store, job.id)
    }

    /// The journal of a session holding `messages`.
    fn journal(session: &str, messages: Vec<Said>) -> SessionJournal {
        let mut s = crate::session::Session::new(
            crate::session::NewSession {
                id: session.into(),
                task: "t".into(),
                workdir: "/w".into(),
                worker_cmd: "true".into(),
                auditor_cmd: "true".into(),
            },
            crate::session::PolicyRef {
                path: None,
                hash: "builtin".into(),
                generation: 1,
                budget: None,
            },
            5,
            1,
        );
        s.messages = messages;
        SessionJournal {
            session: session.into(),
            runner: "r".into(),
            shipped_ms: 0,
            state: serde_json::to_value(&s).unwrap(),
        }
    }

    #[test]
    fn a_message_is_recorded_in_the_audit_trail_and_read_back() {
        let (_d, store, id) = store_with(JobState::Pending);
        let said = say(&store, "job-0000", "look at the parser\n", true, "ann").unwrap();
        assert_eq!(said.job, id);
        assert_eq!(said.runner, None);
        assert_eq!(said.state, JobState::Pending);
        assert_eq!(said.said.text, "look at the parser");
        let audit = store.audit(Some(&id)).unwrap();
        let last = audit.last().unwrap();
        assert_eq!(last.action, AuditAction::Message);
        assert_eq!(last.action.as_str(), "message");
        let read = said_of(last).unwrap();
        assert_eq!(read.id, said.said.id);
        assert!(read.now);
        assert_eq!(read.actor, "ann");
        assert_eq!(messages(&audit), std::slice::from_ref(&read));
        assert_eq!(waiting(&audit, &[]), [read]);
    }

    #[test]
    fn an_ended_job_and_an_empty_message_are_refused() {
        let (_d, store, id) = store_with(JobState::Canceled);
        let e = say(&store, &id, "hello", false, "ann").unwrap_err();
        assert!(matches!(e, JobSayError::Ended { .. }), "{e}");
        assert!(e.to_string().contains("it has ended (CANCELED)"), "{e}");
        assert!(e.to_string().contains("oneshot job create"), "{e}");
        let e = say(&store, &id, "  \n", false, "ann").unwrap_err();
        assert!(e.to_string().contains("the message is empty"), "{e}");
        let e = say(&store, "job-ffff", "hello", false, "ann").unwrap_err();
        assert!(matches!(e, JobSayError::Store { .. }), "{e}");
        assert_eq!(store.audit(Some(&id)).unwrap().len(), 1, "nothing recorded");
    }

    #[test]
    fn a_message_a_worker_took_in_no_longer_waits() {
        let (_d, store, id) = store_with(JobState::Pending);
        let a = say(&store, &id, "first", false, "ann").unwrap().said;
        let b = say(&store, &id, "second", false, "ann").unwrap().said;
        let c = say(&store, &id, "third", false, "ann").unwrap().said;
        let audit = store.audit(Some(&id)).unwrap();
        let with = |m: &Said, status: MessageStatus| Said {
            status,
            ..m.clone()
        };
        let journals = [
            journal(
                "s1",
                vec![
                    with(&a, MessageStatus::InPrompt),
                    with(&b, MessageStatus::NextPrompt),
                ],
            ),
            journal("s2", vec![with(&c, MessageStatus::Taken)]),
        ];
        let left: Vec<String> = waiting(&audit, &journals)
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(left, ["second"]);
        assert!(taken_in(&journals, &a.id));
        assert_eq!(sessions_holding(&journals, &b.id)[0].0, "s1");
    }
}
