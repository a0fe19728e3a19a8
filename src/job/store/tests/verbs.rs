//! The verbs' front door ([`crate::job::verbs::give`]) over a real store: what a reject tells
//! the next attempt, a refused verb writing nothing, and cancel taking a job from a runner.

use super::*;
use crate::job::verbs::{GiveError, Giving, VerbError, give};

on_both_stores!(
    a_reject_tells_the_next_attempt_what_the_latest_artifact_was,
    a_refused_verb_writes_nothing_and_says_what_the_state_allows,
    cancel_takes_a_job_from_its_runner_and_the_runner_can_write_no_more,
    create_stores_the_spec_without_its_secrets_and_refuses_a_command_line_holding_one,
    claimable_says_why_not_by_the_stores_clock,
    a_verb_judged_at_an_older_step_is_refused_though_the_state_is_the_same,
);

/// A verb is bound to the step it was judged at: a runner that stepped the job again in
/// between (a new result, the same resting state) makes it stale, and nothing is written.
fn a_verb_judged_at_an_older_step_is_refused_though_the_state_is_the_same(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Pending, 100);
    let lease = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    let mut stepped = j.clone();
    stepped.steps = 1;
    stepped.phase = crate::job::JobPhase::of(JobState::ApprovalRequired, None, None);
    s.advance(
        &lease,
        &sealed(&stepped),
        Some(&sealed(&moved(
            JobState::Pending,
            JobState::ApprovalRequired,
            JobTrigger::Step,
            1_001,
        ))),
    )
    .unwrap();
    // Judged on the job as it was one step ago.
    let mut seen = stepped.clone();
    seen.steps = 0;
    seen.phase = crate::job::JobPhase::of(JobState::Success, None, None);
    let refused = at(s, 2_000)
        .decide(&Decision {
            job: &sealed(&seen),
            expected: JobState::ApprovalRequired,
            transition: Some(&sealed(&moved(
                JobState::ApprovalRequired,
                JobState::Success,
                JobTrigger::Approve,
                2_000,
            ))),
            audit: &sealed(&entry("job-1", "approve", 2_000)),
            revoke: false,
        })
        .unwrap_err();
    assert_eq!(
        refused,
        JobStoreError::Stepped {
            id: "job-1".into(),
            seen: 0,
            now: 1
        }
    );
    assert!(refused.to_string().contains("stepped again"), "{refused}");
    assert_eq!(s.get("job-1").unwrap().state(), JobState::ApprovalRequired);
    assert_eq!(s.audit(Some("job-1")).unwrap().len(), 1, "nothing audited");
}

fn giving(feedback: Option<&str>, now_ms: u64) -> Giving {
    Giving {
        actor: "ann".into(),
        feedback: feedback.map(Into::into),
        now_ms,
    }
}

fn a_reject_tells_the_next_attempt_what_the_latest_artifact_was(s: &dyn JobStore) {
    add(s, "job-1", JobState::Pending, 100);
    let lease = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    let mut a = artifact(1);
    a.final_message = "added the flag".into();
    a.diff_stat = " 1 file changed".into();
    s.add_artifact(&lease, &sealed(&a)).unwrap();
    let j = s.get("job-1").unwrap();
    step(s, &lease, j, JobState::ApprovalRequired, 1_100);

    let given = give(
        s,
        "job-1",
        JobTrigger::Reject,
        &giving(Some("no tests"), 2_000),
    )
    .unwrap();
    assert_eq!(given.from, JobState::ApprovalRequired);
    assert_eq!(given.job.state(), JobState::Pending);
    let feedback = given.job.feedback().expect("feedback");
    assert_eq!(feedback.critique, "no tests");
    assert_eq!(feedback.previous, "added the flag\n(diff: 1 file changed)");
    let trail = s.audit(Some("job-1")).unwrap();
    let last = trail.last().unwrap();
    assert_eq!(last.action.as_str(), "reject");
    assert_eq!(last.metadata["diff_hash"], "hash-1");
    assert!(last.metadata.contains_key("policy_hash"), "{last:?}");
}

fn a_refused_verb_writes_nothing_and_says_what_the_state_allows(s: &dyn JobStore) {
    add(s, "job-1", JobState::Pending, 100);
    let before = (s.get("job-1").unwrap(), s.audit(Some("job-1")).unwrap());
    match give(s, "job-1", JobTrigger::Approve, &giving(None, 2_000)) {
        Err(GiveError::Verb(VerbError::Refused { id, refused })) => {
            assert_eq!(id, "job-1");
            assert!(refused.to_string().contains("PENDING"), "{refused}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        give(s, "job-1", JobTrigger::Reject, &giving(None, 2_000)),
        Err(GiveError::Verb(_))
    ));
    assert!(matches!(
        give(s, "job-9", JobTrigger::Cancel, &giving(None, 2_000)),
        Err(GiveError::Store(JobStoreError::NotFound { .. }))
    ));
    assert_eq!(
        (s.get("job-1").unwrap(), s.audit(Some("job-1")).unwrap()),
        before
    );
}

fn cancel_takes_a_job_from_its_runner_and_the_runner_can_write_no_more(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Pending, 100);
    let lease = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    step(s, &lease, j, JobState::Executing, 1_100);
    // Any other verb waits for the runner.
    assert!(matches!(
        give(s, "job-1", JobTrigger::Suspend, &giving(None, 1_200)),
        Err(GiveError::Verb(_) | GiveError::Store(JobStoreError::Busy { .. }))
    ));
    let given = give(s, "job-1", JobTrigger::Cancel, &giving(None, 1_200)).unwrap();
    assert_eq!(given.job.state(), JobState::Canceled);
    assert!(matches!(
        at(s, 1_300).heartbeat(&lease, TTL),
        Err(JobStoreError::Fenced { .. })
    ));
}

fn create_stores_the_spec_without_its_secrets_and_refuses_a_command_line_holding_one(
    s: &dyn JobStore,
) {
    use crate::job::{CreateError, Creating, create};
    let how = Creating {
        actor: "ann".into(),
        activate: true,
        now_ms: 1_000,
    };
    let key = "sk-ant-api03-Xq9vB2mK7pL4nR8sT1wY6zA3cD5eF0gH";
    let mut spec = spec(&format!("deploy with {key}"));
    spec.inputs
        .insert("db".into(), format!("postgres://app:{key}@db/main"));
    let made = create(s, "job-1", spec, &how).unwrap();
    assert_eq!(made.job.state(), JobState::Pending);
    assert_eq!(made.redacted, ["the task", "input db"]);
    let stored = s.get("job-1").unwrap();
    assert!(!stored.spec.task.contains(key), "{}", stored.spec.task);
    assert!(!stored.spec.inputs["db"].contains(key));
    let trail = s.audit(Some("job-1")).unwrap();
    let actions: Vec<&str> = trail.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, ["create", "activate"]);

    let mut bad = super::spec("t");
    bad.worker = format!("cmd:curl -H 'x-api-key: {key}' example.com");
    match create(s, "job-2", bad, &how) {
        Err(CreateError::SecretInCommand { role, shown }) => {
            assert_eq!(role, "worker");
            assert!(!shown.contains(key), "{shown}");
        }
        other => panic!("{other:?}"),
    }
    assert!(s.get("job-2").is_err(), "nothing was written");
    assert!(matches!(
        create(s, "job-3", super::spec("  "), &how),
        Err(CreateError::EmptyTask)
    ));
}

fn claimable_says_why_not_by_the_stores_clock(s: &dyn JobStore) {
    use crate::job::runner::{NotClaimable, claimable};
    let j = add(s, "job-1", JobState::Draft, 100);
    assert!(matches!(claimable(s, &j), Err(NotClaimable::Refused(_))));
    let j = add(s, "job-2", JobState::Pending, 100);
    assert_eq!(claimable(s, &j), Ok(()));
    let lease = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    let j = step(
        s,
        &lease,
        s.get("job-2").unwrap(),
        JobState::Executing,
        1_100,
    );
    match claimable(at(s, 1_000 + TTL - 1), &j) {
        Err(NotClaimable::Held {
            runner, until_ms, ..
        }) => {
            assert_eq!((runner.as_str(), until_ms), ("r1", 1_000 + TTL));
        }
        other => panic!("{other:?}"),
    }
    // Expired by the store's clock: a dead runner's step, to recover.
    assert_eq!(claimable(at(s, 1_000 + TTL + 1), &j), Ok(()));
}
