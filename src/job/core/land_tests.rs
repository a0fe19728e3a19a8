//! The job core over `land`: allowed from SUCCESS (once) and from INTERVENTION_REQUIRED only
//! after a failed land; a land records without moving, a failed one moves to
//! INTERVENTION_REQUIRED with its evidence, and a fixed one moves back to SUCCESS.

use crate::job::land::{LandFailure, LandOutcome, LandTarget};
use crate::job::record::{AuditAction, Job, JobSpec};
use crate::job::step::{JobEffect, JobEvent, NoJudge, Step, StepError, VerbWrite};
use crate::job::verbs::{VerbContext, VerbError};
use crate::job::{JobReason, JobState, JobTrigger};

fn cx() -> VerbContext {
    VerbContext {
        actor: "ana".into(),
        now_ms: 9,
        ..Default::default()
    }
}

fn job(state: JobState) -> Job {
    let spec = JobSpec::new("fix the test", "/src", "cmd:sh w.sh", "cmd:sh a.sh");
    Job::new("job-0000abcd", spec, state, 1)
}

fn ask(core: &mut Step) -> Result<Vec<JobEffect>, StepError> {
    let event = JobEvent::Verb {
        verb: JobTrigger::Land,
        cx: cx(),
    };
    core.step(9, event, &mut NoJudge)
}

fn tell(core: &mut Step, outcome: LandOutcome) -> VerbWrite {
    let event = JobEvent::Landed { outcome, cx: cx() };
    let fx = core.step(9, event, &mut NoJudge).expect("judged");
    match <[JobEffect; 1]>::try_from(fx) {
        Ok([JobEffect::Decide(w)]) => w,
        other => panic!("{other:?}"),
    }
}

fn landed() -> LandOutcome {
    LandOutcome::Landed {
        target: LandTarget::Branch {
            branch: "main".into(),
            from: "a".repeat(40),
            to: "b".repeat(40),
        },
        commits: vec!["b".repeat(40)],
    }
}

fn conflict() -> LandOutcome {
    LandOutcome::Failed(LandFailure::Conflict {
        onto: "main at aaaaaaaaaa".into(),
        files: vec!["src/lib.rs".into()],
        worktree: "/wt/job".into(),
    })
}

#[test]
fn a_success_job_lands_without_moving_and_only_once() {
    let mut core = Step::new(job(JobState::Success), "ana");
    assert_eq!(ask(&mut core).unwrap(), vec![JobEffect::Land]);
    let w = tell(&mut core, landed());
    assert_eq!((w.expected, &w.transition), (JobState::Success, &None));
    assert_eq!(w.audit.action, AuditAction::Land);
    assert_eq!(w.audit.metadata["result"], "landed");
    assert_eq!(w.audit.metadata["landed"]["target"]["to"], "b".repeat(40));
    assert_eq!(core.job.state(), JobState::Success);
    let l = core.job.landed.clone().expect("recorded");
    assert_eq!(l.to_string(), "landed into main at bbbbbbbbbb");
    let again = ask(&mut core).unwrap_err();
    assert!(
        matches!(&again, StepError::Verb(VerbError::NotLandable { why, .. }) if why.contains("already landed into main")),
        "{again}"
    );
}

#[test]
fn a_failed_land_needs_a_human_and_a_fixed_one_lands_from_there() {
    let mut core = Step::new(job(JobState::Success), "ana");
    let w = tell(&mut core, conflict());
    let t = w.transition.expect("a move");
    assert_eq!(
        (t.from, t.to, t.trigger),
        (
            JobState::Success,
            JobState::InterventionRequired,
            JobTrigger::LandFailed
        )
    );
    assert_eq!(w.audit.metadata["result"], "failed");
    assert_eq!(w.audit.metadata["failure"]["files"][0], "src/lib.rs");
    let reason = core.job.reason.clone().expect("a reason");
    assert!(matches!(reason, JobReason::LandFailed { .. }));
    assert!(
        reason.to_string().contains("conflicts in src/lib.rs"),
        "{reason}"
    );
    // Fixed by hand: land again from INTERVENTION_REQUIRED.
    assert_eq!(ask(&mut core).unwrap(), vec![JobEffect::Land]);
    let w = tell(&mut core, landed());
    let t = w.transition.expect("a move");
    assert_eq!(
        (t.from, t.to),
        (JobState::InterventionRequired, JobState::Success)
    );
    assert_eq!(core.job.state(), JobState::Success);
    assert!(core.job.landed.is_some());
}

#[test]
fn land_is_refused_where_no_failed_land_led() {
    let mut j = job(JobState::InterventionRequired);
    j.reason = Some(JobReason::failed("harvest failed: disk"));
    let mut core = Step::new(j.clone(), "ana");
    let e = ask(&mut core).unwrap_err().to_string();
    assert!(e.contains("only after a failed land"), "{e}");
    assert!(e.contains("harvest failed: disk"), "{e}");
    // Its outcome is refused too: the core never records a land it did not allow.
    let event = JobEvent::Landed {
        outcome: landed(),
        cx: cx(),
    };
    assert!(core.step(9, event, &mut NoJudge).is_err());
    assert_eq!(core.job, j);
    for state in [
        JobState::ApprovalRequired,
        JobState::Pending,
        JobState::Canceled,
    ] {
        let mut core = Step::new(job(state), "ana");
        let e = ask(&mut core).unwrap_err().to_string();
        assert!(
            e.contains(&format!("land is not allowed in {state}")),
            "{e}"
        );
    }
}
