//! Where a job is, with what exists there and nowhere else: a reject's feedback while the
//! next attempt is prepared and run, the session while it runs, what recovery is recovering.
//! What outlives phases — the workspace (from its provisioning until cleanup) and the latest
//! session that ran — stays on the [`crate::job::Job`].

use crate::job::JobState;
use crate::job::record::Feedback;

/// A job's phase: its [`JobState`] with the data that exists in it.
#[derive(Debug, Clone, PartialEq)]
pub enum JobPhase {
    /// Created, being configured.
    Draft,
    /// Waiting for a runner; `feedback`: a reject's critique for the next attempt's prompt.
    Pending {
        /// A reject's feedback, given to the next prompt.
        feedback: Option<Feedback>,
    },
    /// The runner makes the workspace.
    Provisioning {
        /// A reject's feedback, given to the next prompt.
        feedback: Option<Feedback>,
    },
    /// The agents run.
    Executing {
        /// A reject's feedback, given to the prompt.
        feedback: Option<Feedback>,
        /// The session, once it is made (journaled before it runs).
        session: Option<String>,
    },
    /// The runner restarts a stuck execution.
    Recovering {
        /// A reject's feedback, given to a new session's prompt.
        feedback: Option<Feedback>,
        /// The session the failed execution left, to continue or harvest.
        session: Option<String>,
    },
    /// The runner collects the outcome.
    Harvesting {
        /// The session whose work is harvested.
        session: Option<String>,
    },
    /// Terminal: done.
    Success,
    /// A human must approve the result (or reject it with feedback).
    ApprovalRequired,
    /// A human must fix something and resubmit.
    InterventionRequired,
    /// Paused; `resume` makes it PENDING again.
    Suspended,
    /// Terminal: stopped by a human.
    Canceled,
}

impl JobPhase {
    /// The phase's state.
    pub const fn state(&self) -> JobState {
        match self {
            JobPhase::Draft => JobState::Draft,
            JobPhase::Pending { .. } => JobState::Pending,
            JobPhase::Provisioning { .. } => JobState::Provisioning,
            JobPhase::Executing { .. } => JobState::Executing,
            JobPhase::Recovering { .. } => JobState::Recovering,
            JobPhase::Harvesting { .. } => JobState::Harvesting,
            JobPhase::Success => JobState::Success,
            JobPhase::ApprovalRequired => JobState::ApprovalRequired,
            JobPhase::InterventionRequired => JobState::InterventionRequired,
            JobPhase::Suspended => JobState::Suspended,
            JobPhase::Canceled => JobState::Canceled,
        }
    }

    /// The phase of `state` holding what it can of `feedback` and `session` (the rest is
    /// dropped: it does not exist there).
    pub fn of(state: JobState, feedback: Option<Feedback>, session: Option<String>) -> JobPhase {
        match state {
            JobState::Draft => JobPhase::Draft,
            JobState::Pending => JobPhase::Pending { feedback },
            JobState::Provisioning => JobPhase::Provisioning { feedback },
            JobState::Executing => JobPhase::Executing { feedback, session },
            JobState::Recovering => JobPhase::Recovering { feedback, session },
            JobState::Harvesting => JobPhase::Harvesting { session },
            JobState::Success => JobPhase::Success,
            JobState::ApprovalRequired => JobPhase::ApprovalRequired,
            JobState::InterventionRequired => JobPhase::InterventionRequired,
            JobState::Suspended => JobPhase::Suspended,
            JobState::Canceled => JobPhase::Canceled,
        }
    }

    /// The reject's feedback this phase carries for the next prompt.
    pub fn feedback(&self) -> Option<&Feedback> {
        match self {
            JobPhase::Pending { feedback }
            | JobPhase::Provisioning { feedback }
            | JobPhase::Executing { feedback, .. }
            | JobPhase::Recovering { feedback, .. } => feedback.as_ref(),
            _ => None,
        }
    }

    /// The session of a step under way (EXECUTING, RECOVERING, HARVESTING).
    pub fn session(&self) -> Option<&str> {
        match self {
            JobPhase::Executing { session, .. }
            | JobPhase::Recovering { session, .. }
            | JobPhase::Harvesting { session } => session.as_deref(),
            _ => None,
        }
    }

    /// The phase `to` is entered as from this one: what exists in both is carried over.
    pub(crate) fn into_state(self, to: JobState) -> JobPhase {
        let feedback = self.feedback().cloned();
        let session = self.session().map(str::to_string);
        JobPhase::of(to, feedback, session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::record::{Job, JobSpec};

    fn feedback() -> Feedback {
        Feedback {
            previous: "it printed 3".into(),
            critique: "it must print 4".into(),
        }
    }

    #[test]
    fn feedback_lives_until_the_harvest_and_the_session_outlives_its_step() {
        let mut j = Job::new(
            "job-1",
            JobSpec::new("t", "/s", "w", "a"),
            JobState::Pending,
            1,
        );
        j.phase = JobPhase::Pending {
            feedback: Some(feedback()),
        };
        j.enter(JobState::Provisioning);
        j.enter(JobState::Executing);
        assert_eq!(j.feedback(), Some(&feedback()), "the prompt still needs it");
        j.set_session("s1".into());
        j.enter(JobState::Recovering);
        assert_eq!((j.session(), j.feedback()), (Some("s1"), Some(&feedback())));
        j.enter(JobState::Executing);
        j.enter(JobState::Harvesting);
        assert_eq!((j.session(), j.feedback()), (Some("s1"), None));
        j.enter(JobState::ApprovalRequired);
        assert_eq!(j.phase, JobPhase::ApprovalRequired);
        assert_eq!(j.session(), Some("s1"), "the latest session, at rest");
    }

    #[test]
    fn a_job_is_stored_flat_and_read_back_whole() {
        let mut j = Job::new(
            "job-1",
            JobSpec::new("t", "/s", "w", "a"),
            JobState::Pending,
            1,
        );
        j.phase = JobPhase::Pending {
            feedback: Some(feedback()),
        };
        j.last_session = Some("s0".into());
        let v = serde_json::to_value(&j).unwrap();
        assert_eq!(v["state"], "PENDING");
        assert_eq!(v["feedback"]["critique"], "it must print 4");
        assert_eq!(v["session"], "s0");
        assert!(
            v.get("phase").is_none() && v.get("last_session").is_none(),
            "{v}"
        );
        assert_eq!(serde_json::from_value::<Job>(v).unwrap(), j);
        // A step under way: the session is the phase's.
        j.enter(JobState::Provisioning);
        j.enter(JobState::Executing);
        j.set_session("s1".into());
        let back: Job = serde_json::from_value(serde_json::to_value(&j).unwrap()).unwrap();
        assert_eq!(back.phase, j.phase);
        assert_eq!(back.session(), Some("s1"));
    }
}
