//! The job core over humans' verbs and runners' events together: every verb from every state,
//! judgements recorded before the moves they lead to, and a property test that no sequence of
//! events and verbs leaves seed 001's matrix or acts before it journals.

use crate::job::decision::Judgement;
use crate::job::record::{Job, JobSpec, PanelVerdict, PanelWord, Workspace};
use crate::job::step::{
    Found, HarvestFacts, JobEffect, JobEvent, NoJudge, RunnerEvent, SessionEnd, SessionOutcome,
    Step, StepError, VerbWrite,
};
use crate::job::verbs::{VerbContext, VerbError};
use crate::job::{Harvest, JobState, JobTrigger, next};
use crate::machine::SessionState;
use crate::policy::{Approval, ApprovalJob, ApprovalResult, ApproveDecision, RetryLimits};
use proptest::prelude::*;
use std::time::Duration;

fn job(state: JobState) -> Job {
    let spec = JobSpec::new("fix the test", "/src", "cmd:sh w.sh", "cmd:sh a.sh");
    let mut j = Job::new("job-0000abcd", spec, state, 1);
    j.set_session("s1".into());
    j
}

fn verb(v: JobTrigger, feedback: Option<&str>) -> JobEvent {
    JobEvent::Verb {
        verb: v,
        cx: VerbContext {
            actor: "ana".into(),
            now_ms: 7,
            feedback: feedback.map(str::to_string),
            ..Default::default()
        },
    }
}

#[test]
fn every_verb_from_every_state_moves_as_the_matrix_says_or_changes_nothing() {
    let verbs = JobTrigger::ALL
        .into_iter()
        // `land` asks for git work first: its own tests are in land_tests.rs.
        .filter(|t| t.is_verb() && !matches!(t, JobTrigger::Step | JobTrigger::Land));
    for v in verbs {
        for state in JobState::ALL {
            let before = job(state);
            let mut core = Step::new(before.clone(), "runner-1");
            let got = core.step(7, verb(v, Some("too slow")), &mut NoJudge);
            match next(state, v) {
                Ok(to) => {
                    let fx = got.unwrap_or_else(|e| panic!("{v} in {state}: {e}"));
                    let [
                        JobEffect::Decide(VerbWrite {
                            expected,
                            transition,
                            audit,
                            revoke,
                        }),
                    ] = &fx[..]
                    else {
                        panic!("{v} in {state}: {fx:?}")
                    };
                    let transition = transition.as_ref().expect("a verb moves");
                    assert_eq!(
                        (*expected, transition.from, transition.to),
                        (state, state, to)
                    );
                    assert_eq!(transition.by, "ana", "a verb names its actor, not a runner");
                    assert_eq!(core.job.state(), to);
                    assert_eq!(core.job.counter(v.name()), 1);
                    assert_eq!(audit.action.as_str(), v.name());
                    assert_eq!(audit.metadata["from"], state.as_str());
                    assert_eq!(*revoke, v == JobTrigger::Cancel && !state.is_resting());
                }
                Err(refused) => {
                    assert_eq!(
                        got,
                        Err(StepError::Verb(VerbError::Refused {
                            id: before.id.clone(),
                            refused
                        })),
                        "{v} in {state}"
                    );
                    assert_eq!(core.job, before, "a refused verb changes nothing");
                }
            }
        }
    }
    // The runner's step is claimed, never given as a verb.
    let mut core = Step::new(job(JobState::Pending), "r");
    assert_eq!(
        core.step(1, verb(JobTrigger::Step, None), &mut NoJudge),
        Err(StepError::Verb(VerbError::NotAVerb {
            verb: JobTrigger::Step
        }))
    );
}

/// A judge whose answers and retry limits a test sets.
struct Scripted {
    approval: Approval,
    attempts: u32,
}

impl crate::job::step::JobJudge for Scripted {
    fn approve(&mut self, _: &ApprovalResult, _: &ApprovalJob) -> Result<ApproveDecision, String> {
        Ok(ApproveDecision {
            approval: self.approval,
            reason: Some("scripted".into()),
        })
    }
    fn retry(&self) -> RetryLimits {
        RetryLimits {
            attempts: self.attempts,
            initial_delay: Duration::from_millis(10),
            ..RetryLimits::default()
        }
    }
    fn policy_hash(&self) -> Option<String> {
        Some("h1".into())
    }
}

/// Session `s1`'s end in `state` (the runner's tests use it too).
pub(crate) fn end(state: SessionState) -> SessionEnd {
    SessionEnd {
        session: "s1".into(),
        outcome: SessionOutcome::Ended(state),
        reason: None,
        verdict: None,
        confidence: None,
        findings: Vec::new(),
        final_message: String::new(),
    }
}

fn ws() -> Workspace {
    Workspace {
        path: "/wt".into(),
        branch: None,
        base_commit: None,
        base_branch: None,
    }
}

fn facts() -> HarvestFacts {
    HarvestFacts {
        commit: None,
        diff_hash: "d".into(),
        diff_stat: String::new(),
        files: Vec::new(),
        empty: false,
    }
}

/// Where a `Decided` sits among the effects, and where the first save of a transition does.
fn order(fx: &[JobEffect]) -> (usize, usize) {
    let decided = fx
        .iter()
        .position(|e| matches!(e, JobEffect::Decided(_)))
        .expect("a decision record");
    let moved = fx
        .iter()
        .position(|e| {
            matches!(
                e,
                JobEffect::Save {
                    transition: Some(_),
                    ..
                }
            )
        })
        .expect("a move");
    (decided, moved)
}

#[test]
fn judgements_are_recorded_before_the_moves_they_lead_to() {
    let mut judge = Scripted {
        approval: Approval::Approve,
        attempts: 1,
    };
    // approve: recorded with what the hook saw, its answer and where the core sent the job.
    let mut core = Step::new(job(JobState::Pending), "r");
    for e in [
        RunnerEvent::Claimed { reclaimed: false },
        RunnerEvent::Provisioned(ws()),
        RunnerEvent::SessionEnded(end(SessionState::Completed)),
    ] {
        core.step(1, e, &mut judge).unwrap();
    }
    let fx = core
        .step(2, RunnerEvent::Harvested(facts()), &mut judge)
        .unwrap();
    let (decided, moved) = order(&fx);
    assert!(decided < moved, "{fx:?}");
    let JobEffect::Decided(d) = &fx[decided] else {
        unreachable!()
    };
    assert_eq!((d.step, d.policy_hash.as_deref()), (1, Some("h1")));
    let Judgement::Approve {
        result,
        answer,
        outcome,
        ..
    } = &d.judgement
    else {
        panic!("{d:?}")
    };
    assert!(result.completed);
    assert_eq!(answer.as_ref().map(|a| a.approval), Some(Approval::Approve));
    assert_eq!(*outcome, Harvest::Success);

    // retry: one retry granted, then spent — each recorded before the move.
    let mut core = Step::new(job(JobState::Executing), "r");
    let fx = core
        .step(1, RunnerEvent::Claimed { reclaimed: true }, &mut judge)
        .unwrap();
    let (decided, moved) = order(&fx);
    assert!(decided < moved, "{fx:?}");
    assert!(matches!(
        &fx[decided],
        JobEffect::Decided(d) if matches!(d.judgement, Judgement::Retry { retries: 0, attempts: 1, after_ms: Some(10), .. })
    ));
    core.step(
        2,
        RunnerEvent::Inspected(Found::Session(end(SessionState::Interrupted))),
        &mut judge,
    )
    .unwrap();
    core.step(
        3,
        RunnerEvent::SessionMade {
            session: "s1".into(),
        },
        &mut judge,
    )
    .unwrap();
    let fx = core
        .step(
            4,
            RunnerEvent::SessionEnded(end(SessionState::Interrupted)),
            &mut judge,
        )
        .unwrap();
    let (decided, moved) = order(&fx);
    assert!(decided < moved, "{fx:?}");
    assert!(matches!(
        &fx[decided],
        JobEffect::Decided(d) if matches!(d.judgement, Judgement::Retry { retries: 1, after_ms: None, .. })
    ));
    assert_eq!(core.job.state(), JobState::InterventionRequired);
}

#[test]
fn recovery_harvests_a_session_that_had_ended_and_resumes_one_that_had_not() {
    let mut judge = Scripted {
        approval: Approval::Human,
        attempts: 3,
    };
    let recovering = || Step::new(job(JobState::Recovering), "r");
    let mut core = recovering();
    let fx = core
        .step(
            1,
            RunnerEvent::Inspected(Found::Session(end(SessionState::Completed))),
            &mut judge,
        )
        .unwrap();
    assert_eq!(core.job.state(), JobState::Harvesting);
    assert!(
        matches!(fx.last(), Some(JobEffect::Harvest { .. })),
        "{fx:?}"
    );
    let mut core = recovering();
    let fx = core
        .step(
            1,
            RunnerEvent::Inspected(Found::Session(end(SessionState::WorkerExecuting))),
            &mut judge,
        )
        .unwrap();
    assert!(
        matches!(fx.last(), Some(JobEffect::Execute { resume: Some(s), .. }) if s == "s1"),
        "{fx:?}"
    );
    let mut core = recovering();
    let fx = core
        .step(1, RunnerEvent::Inspected(Found::Nothing), &mut judge)
        .unwrap();
    assert!(matches!(
        fx.last(),
        Some(JobEffect::Execute { resume: None, .. })
    ));
    // Run on another machine: a fresh conversation, told what the earlier one last said, and
    // the history says so.
    let mut core = recovering();
    let fx = core
        .step(
            1,
            RunnerEvent::Inspected(Found::Elsewhere {
                session: "s9".into(),
                runner: "other-host-7-ab12-0".into(),
                account: "made half of it".into(),
                workspace: Some(crate::job::record::Workspace {
                    path: "/here/worktrees/x".into(),
                    branch: Some("oneshot/x".into()),
                    base_commit: Some("abc".into()),
                    base_branch: None,
                }),
            }),
            &mut judge,
        )
        .unwrap();
    let Some(JobEffect::Execute {
        resume: None,
        prompt,
    }) = fx.last()
    else {
        panic!("{fx:?}")
    };
    assert!(
        prompt.contains("another machine") && prompt.contains("made half of it"),
        "{prompt}"
    );
    assert_eq!(core.job.state(), JobState::Executing);
    assert_eq!(
        core.job.workspace.as_ref().map(|w| w.path.clone()),
        Some("/here/worktrees/x".into()),
        "the session runs in this machine's workspace"
    );
    let said = core.job.reason_words().unwrap_or_default();
    assert!(
        said.contains("s9") && said.contains("other-host-7-ab12-0") && said.contains("fresh"),
        "{said}"
    );
    let mut core = recovering();
    core.step(
        1,
        RunnerEvent::Inspected(Found::Unreadable {
            reason: "garbled".into(),
        }),
        &mut judge,
    )
    .unwrap();
    assert_eq!(core.job.state(), JobState::InterventionRequired);
}

/// The state an acting effect belongs to: the store must hold the job there before the
/// runner acts (so that a runner dying mid-act leaves a job the next one can recover).
fn acts_in(e: &JobEffect) -> Option<JobState> {
    match e {
        JobEffect::Provision { .. } => Some(JobState::Provisioning),
        JobEffect::Execute { .. } | JobEffect::RunSession => Some(JobState::Executing),
        JobEffect::Recover { .. } => Some(JobState::Recovering),
        JobEffect::Harvest { .. } | JobEffect::ReadSession(_) | JobEffect::Audit(_) => {
            Some(JobState::Harvesting)
        }
        _ => None,
    }
}

fn any_state() -> impl Strategy<Value = JobState> {
    prop::sample::select(JobState::ALL.to_vec())
}

fn any_session_state() -> impl Strategy<Value = SessionState> {
    prop::sample::select(vec![
        SessionState::Completed,
        SessionState::Failed,
        SessionState::Rejected,
        SessionState::Interrupted,
        SessionState::WorkerExecuting,
    ])
}

fn any_event() -> impl Strategy<Value = JobEvent> {
    let runner = prop_oneof![
        any::<bool>().prop_map(|r| RunnerEvent::Claimed { reclaimed: r }),
        Just(RunnerEvent::Provisioned(ws())),
        any::<bool>().prop_map(|t| RunnerEvent::ProvisionFailed {
            reason: "x".into(),
            transient: t
        }),
        Just(RunnerEvent::SessionMade {
            session: "s2".into()
        }),
        any_session_state().prop_map(|s| RunnerEvent::SessionEnded(end(s))),
        any_session_state().prop_map(|s| RunnerEvent::Inspected(Found::Session(end(s)))),
        Just(RunnerEvent::Inspected(Found::Nothing)),
        Just(RunnerEvent::Inspected(Found::Elsewhere {
            session: "s3".into(),
            runner: "r9".into(),
            account: String::new(),
            workspace: None,
        })),
        Just(RunnerEvent::Harvested(facts())),
        any::<bool>().prop_map(|o| RunnerEvent::HarvestFailed {
            reason: "x".into(),
            out_of_space: o
        }),
        prop::collection::vec(any::<bool>(), 0..3).prop_map(|done| {
            RunnerEvent::Audited(
                done.into_iter()
                    .map(|d| PanelVerdict {
                        auditor: "a".into(),
                        verdict: if d { PanelWord::Done } else { PanelWord::Retry },
                        reason: String::new(),
                        confidence: None,
                    })
                    .collect(),
            )
        }),
    ];
    let verbs: Vec<JobTrigger> = JobTrigger::ALL
        .into_iter()
        .filter(|t| t.is_verb())
        .collect();
    prop_oneof![
        3 => runner.prop_map(JobEvent::Runner),
        1 => (prop::sample::select(verbs), any::<bool>())
            .prop_map(|(v, f)| verb(v, f.then_some("again"))),
    ]
}

proptest! {
    #[test]
    fn no_events_and_verbs_leave_the_matrix_or_act_before_journaling(
        start in any_state(),
        events in prop::collection::vec(any_event(), 0..40),
        approval in prop::sample::select(vec![Approval::Approve, Approval::Human, Approval::Intervene]),
        attempts in 0u32..3,
        panel in any::<bool>(),
    ) {
        let mut j = job(start);
        if panel {
            j.spec.panel = vec!["cmd:a".into()];
        }
        let mut core = Step::new(j, "r");
        let mut judge = Scripted { approval, attempts };
        // What the store holds: the claimed job's state, then each save's.
        let mut journaled = start;
        for e in events {
            let before = core.job.clone();
            match core.step(5, e, &mut judge) {
                Err(_) => prop_assert_eq!(&core.job, &before, "a refusal changes nothing"),
                Ok(fx) => {
                    for effect in &fx {
                        match effect {
                            JobEffect::Save { job, transition: None } => {
                                prop_assert_eq!(job.state(), journaled, "a save without a move keeps the state");
                            }
                            JobEffect::Save { job, transition: Some(t) } => {
                                prop_assert_eq!(t.from, journaled, "moves chain from what was journaled");
                                prop_assert_eq!(next(t.from, t.trigger), Ok(t.to), "{:?}", t);
                                prop_assert_eq!(job.state(), t.to, "the job is journaled as of its move");
                                journaled = t.to;
                            }
                            JobEffect::Decide(VerbWrite { transition: Some(t), .. }) => {
                                prop_assert_eq!(t.from, journaled, "moves chain from what was journaled");
                                prop_assert_eq!(next(t.from, t.trigger), Ok(t.to), "{:?}", t);
                                journaled = t.to;
                            }
                            other => {
                                if let Some(state) = acts_in(other) {
                                    prop_assert_eq!(journaled, state, "{:?} before its state was journaled", other);
                                }
                            }
                        }
                    }
                    prop_assert_eq!(core.job.state(), journaled);
                }
            }
        }
    }
}
