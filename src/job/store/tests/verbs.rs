//! The verbs' front door ([`crate::job::verbs::give`]) over a real store: what a reject tells
//! the next attempt, a refused verb writing nothing, and cancel taking a job from a runner.

use super::*;
use crate::job::verbs::{GiveError, Giving, VerbError, give};

fn giving(feedback: Option<&str>, now_ms: u64) -> Giving {
    Giving {
        actor: "ann".into(),
        feedback: feedback.map(Into::into),
        now_ms,
    }
}

#[test]
fn a_reject_tells_the_next_attempt_what_the_latest_artifact_was() {
    let (_d, s) = store();
    add(&s, "job-1", JobState::Pending, 100);
    let lease = at(&s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    let mut a = artifact(1);
    a.final_message = "added the flag".into();
    a.diff_stat = " 1 file changed".into();
    s.add_artifact(&lease, &sealed(&a)).unwrap();
    let j = s.get("job-1").unwrap();
    step(&s, &lease, j, JobState::ApprovalRequired, 1_100);

    let given = give(
        &s,
        "job-1",
        JobTrigger::Reject,
        &giving(Some("no tests"), 2_000),
    )
    .unwrap();
    assert_eq!(given.from, JobState::ApprovalRequired);
    assert_eq!(given.job.state, JobState::Pending);
    let feedback = given.job.feedback.expect("feedback");
    assert_eq!(feedback.critique, "no tests");
    assert_eq!(feedback.previous, "added the flag\n(diff: 1 file changed)");
    let trail = s.audit(Some("job-1")).unwrap();
    let last = trail.last().unwrap();
    assert_eq!(last.action, "reject");
    assert_eq!(last.metadata["diff_hash"], "hash-1");
    assert!(last.metadata.contains_key("policy_hash"), "{last:?}");
}

#[test]
fn a_refused_verb_writes_nothing_and_says_what_the_state_allows() {
    let (_d, s) = store();
    add(&s, "job-1", JobState::Pending, 100);
    let before = (s.get("job-1").unwrap(), s.audit(Some("job-1")).unwrap());
    match give(&s, "job-1", JobTrigger::Approve, &giving(None, 2_000)) {
        Err(GiveError::Verb(VerbError::Refused { id, refused })) => {
            assert_eq!(id, "job-1");
            assert!(refused.to_string().contains("PENDING"), "{refused}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        give(&s, "job-1", JobTrigger::Reject, &giving(None, 2_000)),
        Err(GiveError::Verb(_))
    ));
    assert!(matches!(
        give(&s, "job-9", JobTrigger::Cancel, &giving(None, 2_000)),
        Err(GiveError::Store(JobStoreError::NotFound { .. }))
    ));
    assert_eq!(
        (s.get("job-1").unwrap(), s.audit(Some("job-1")).unwrap()),
        before
    );
}

#[test]
fn cancel_takes_a_job_from_its_runner_and_the_runner_can_write_no_more() {
    let (_d, s) = store();
    let j = add(&s, "job-1", JobState::Pending, 100);
    let lease = at(&s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    step(&s, &lease, j, JobState::Executing, 1_100);
    // Any other verb waits for the runner.
    assert!(matches!(
        give(&s, "job-1", JobTrigger::Suspend, &giving(None, 1_200)),
        Err(GiveError::Verb(_) | GiveError::Store(JobStoreError::Busy { .. }))
    ));
    let given = give(&s, "job-1", JobTrigger::Cancel, &giving(None, 1_200)).unwrap();
    assert_eq!(given.job.state, JobState::Canceled);
    assert!(matches!(
        at(&s, 1_300).heartbeat(&lease, TTL),
        Err(JobStoreError::Fenced { .. })
    ));
}
