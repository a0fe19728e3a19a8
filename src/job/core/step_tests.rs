//! The runner's decision core, fed scripted events: every path of a step.

use crate::job::record::{Job, JobSpec, PanelVerdict, Workspace};
use crate::job::step::{
    Found, HarvestFacts, JobEffect, JobEvent, JobJudge, RunnerEvent, SessionEnd, SessionOutcome,
    Step, StepError, prompt,
};
use crate::job::{JobState, verbs};
use crate::policy::{
    Approval, ApprovalJob, ApprovalResult, ApproveDecision, RetryLimits, default_approve,
};
use std::time::Duration;

/// The built-in approval, or a fixed answer; records what it was shown.
struct Judge {
    answer: Option<Result<Approval, String>>,
    seen: Vec<(ApprovalResult, ApprovalJob)>,
    attempts: u32,
}

impl Judge {
    fn builtin() -> Judge {
        Judge {
            answer: None,
            seen: Vec::new(),
            attempts: 2,
        }
    }
    fn says(a: Result<Approval, String>) -> Judge {
        Judge {
            answer: Some(a),
            ..Judge::builtin()
        }
    }
}

impl JobJudge for Judge {
    fn approve(&mut self, r: &ApprovalResult, j: &ApprovalJob) -> Result<ApproveDecision, String> {
        self.seen.push((r.clone(), j.clone()));
        match &self.answer {
            None => Ok(default_approve(r, j)),
            Some(Ok(a)) => Ok(ApproveDecision {
                approval: *a,
                reason: None,
            }),
            Some(Err(e)) => Err(e.clone()),
        }
    }
    fn retry(&self) -> RetryLimits {
        RetryLimits {
            attempts: self.attempts,
            initial_delay: Duration::from_secs(1),
            ..RetryLimits::default()
        }
    }
}

/// `Step::step` for events the state expects: the effects.
trait Go {
    fn go(&mut self, now: u64, e: impl Into<JobEvent>, judge: &mut dyn JobJudge) -> Vec<JobEffect>;
}

impl Go for Step {
    fn go(&mut self, now: u64, e: impl Into<JobEvent>, judge: &mut dyn JobJudge) -> Vec<JobEffect> {
        let e = e.into();
        let name = e.name();
        self.step(now, e, judge)
            .unwrap_or_else(|err| panic!("{name}: {err}"))
    }
}

/// The effects but the decision records.
fn acts(fx: &[JobEffect]) -> Vec<JobEffect> {
    fx.iter()
        .filter(|e| !matches!(e, JobEffect::Decided(_)))
        .cloned()
        .collect()
}

fn job(state: JobState) -> Job {
    let spec = JobSpec::new("fix the test", "/src", "cmd:sh w.sh", "cmd:sh a.sh");
    Job::new("job-0000abcd", spec, state, 1)
}

fn ws() -> Workspace {
    Workspace {
        path: "/wt/job".into(),
        branch: Some("oneshot/job".into()),
        base_commit: Some("abc".into()),
        base_branch: None,
    }
}

fn end(completed: bool, transient: bool) -> SessionEnd {
    SessionEnd {
        session: "s1".into(),
        outcome: SessionOutcome::Ended(if completed {
            crate::machine::SessionState::Completed
        } else if transient {
            crate::machine::SessionState::Interrupted
        } else {
            crate::machine::SessionState::Failed
        }),
        reason: Some("because".into()),
        verdict: Some(if completed { "done" } else { "retry" }.into()),
        confidence: Some(0.9),
        findings: if completed {
            vec![]
        } else {
            vec!["tests fail".into()]
        },
        final_message: "I fixed it".into(),
    }
}

fn facts(empty: bool) -> HarvestFacts {
    HarvestFacts {
        commit: (!empty).then(|| "c1".into()),
        diff_hash: if empty { "e" } else { "d1" }.into(),
        diff_stat: " 1 file changed".into(),
        files: if empty { vec![] } else { vec!["a.rs".into()] },
        empty,
    }
}

/// Drives a step from PENDING through a session ending `e` and a harvest of `f`.
fn full_step(step: &mut Step, judge: &mut Judge, e: SessionEnd, f: HarvestFacts) -> Vec<JobEffect> {
    let mut all = step.go(10, RunnerEvent::Claimed { reclaimed: false }, judge);
    all.extend(step.go(11, RunnerEvent::Provisioned(ws()), judge));
    all.extend(step.go(12, RunnerEvent::SessionEnded(e), judge));
    all.extend(step.go(13, RunnerEvent::Harvested(f), judge));
    all
}

fn states(fx: &[JobEffect]) -> Vec<JobState> {
    fx.iter()
        .filter_map(|e| match e {
            JobEffect::Save {
                transition: Some(t),
                ..
            } => Some(t.to),
            _ => None,
        })
        .collect()
}

#[test]
fn a_clean_step_goes_through_every_transient_state_to_a_human() {
    let mut step = Step::new(job(JobState::Pending), "r1");
    let mut judge = Judge::builtin();
    let fx = full_step(&mut step, &mut judge, end(true, false), facts(false));
    use JobState::*;
    assert_eq!(
        states(&fx),
        [Provisioning, Executing, Harvesting, ApprovalRequired]
    );
    assert!(
        fx.iter()
            .any(|e| matches!(e, JobEffect::Provision { after } if after.is_zero()))
    );
    assert!(fx.iter().any(
        |e| matches!(e, JobEffect::Execute { resume: None, prompt } if prompt == "fix the test")
    ));
    let art = fx.iter().find_map(|e| match e {
        JobEffect::AddArtifact(a) => Some(a.clone()),
        _ => None,
    });
    let art = art.expect("an artifact version");
    assert_eq!(
        (art.step, art.commit.as_deref(), art.final_message.as_str()),
        (1, Some("c1"), "I fixed it")
    );
    assert_eq!(fx.last(), Some(&JobEffect::Done));
    assert_eq!((step.job.steps, step.job.loops), (1, 1));
    assert_eq!(step.job.counter("EXECUTING"), 1);
    assert_eq!(judge.seen.len(), 1);
    assert!(judge.seen[0].0.completed);
}

#[test]
fn the_policy_chooses_among_what_harvesting_allows() {
    for (answer, to) in [
        (Ok(Approval::Approve), JobState::Success),
        (Ok(Approval::Intervene), JobState::InterventionRequired),
        (Err("boom".to_string()), JobState::InterventionRequired),
    ] {
        let mut step = Step::new(job(JobState::Pending), "r1");
        let mut judge = Judge::says(answer.clone());
        full_step(&mut step, &mut judge, end(true, false), facts(false));
        assert_eq!(step.job.state(), to, "{answer:?}");
        if answer.is_err() {
            assert!(
                step.job
                    .reason_words()
                    .as_deref()
                    .unwrap()
                    .contains("policy error in approve: boom")
            );
        }
    }
}

#[test]
fn a_failed_session_needs_a_human_to_intervene() {
    let mut step = Step::new(job(JobState::Pending), "r1");
    full_step(
        &mut step,
        &mut Judge::builtin(),
        end(false, false),
        facts(false),
    );
    assert_eq!(step.job.state(), JobState::InterventionRequired);
    assert!(
        step.job
            .reason_words()
            .as_deref()
            .unwrap()
            .contains("FAILED"),
        "{:?}",
        step.job.reason
    );
}

#[test]
fn no_judge_can_auto_approve_a_failed_session() {
    // A judge that approves everything (not the Lua host, which refuses it itself): the core
    // holds the bound.
    let mut step = Step::new(job(JobState::Pending), "r1");
    let mut judge = Judge::says(Ok(Approval::Approve));
    full_step(&mut step, &mut judge, end(false, false), facts(false));
    assert_eq!(step.job.state(), JobState::InterventionRequired);
    let why = step.job.reason_words().unwrap_or_default();
    assert!(why.contains("the policy approved, but"), "{why}");
    assert!(why.contains("cannot be auto-approved"), "{why}");
    // Completed work it may approve.
    let mut step = Step::new(job(JobState::Pending), "r1");
    full_step(&mut step, &mut judge, end(true, false), facts(false));
    assert_eq!(step.job.state(), JobState::Success);
}

#[test]
fn a_transient_failure_is_retried_with_backoff_then_gives_up() {
    let mut step = Step::new(job(JobState::Pending), "r1");
    let mut judge = Judge::builtin();
    step.go(1, RunnerEvent::Claimed { reclaimed: false }, &mut judge);
    step.go(2, RunnerEvent::Provisioned(ws()), &mut judge);
    let mut delays = Vec::new();
    for _ in 0..2 {
        let fx = step.go(3, RunnerEvent::SessionEnded(end(false, true)), &mut judge);
        assert_eq!(states(&fx), [JobState::Recovering]);
        let Some(JobEffect::Recover { session, after }) = fx.last().cloned() else {
            panic!("{fx:?}")
        };
        assert_eq!(session.as_deref(), Some("s1"));
        delays.push(after);
        let fx = step.go(
            4,
            RunnerEvent::Inspected(Found::Session(end(false, true))),
            &mut judge,
        );
        assert!(matches!(fx.last(), Some(JobEffect::Execute { resume: Some(s), .. }) if s == "s1"));
    }
    assert_eq!(delays, [Duration::from_secs(1), Duration::from_secs(2)]);
    // The third transient failure finds the retries spent.
    let fx = step.go(5, RunnerEvent::SessionEnded(end(false, true)), &mut judge);
    assert_eq!(
        states(&fx),
        [JobState::Recovering, JobState::InterventionRequired]
    );
    assert!(
        step.job
            .reason_words()
            .as_deref()
            .unwrap()
            .contains("gave up after 2 retries")
    );
    assert_eq!(fx.last(), Some(&JobEffect::Done));
}

#[test]
fn a_transient_provision_failure_is_retried_a_bad_one_is_not() {
    let mut step = Step::new(job(JobState::Pending), "r1");
    let mut judge = Judge::builtin();
    step.go(1, RunnerEvent::Claimed { reclaimed: false }, &mut judge);
    let fx = step.go(
        2,
        RunnerEvent::ProvisionFailed {
            reason: "lock".into(),
            transient: true,
        },
        &mut judge,
    );
    assert!(
        matches!(
            &acts(&fx)[..],
            [
                JobEffect::Save {
                    transition: None,
                    ..
                },
                JobEffect::Provision { after }
            ] if *after == Duration::from_secs(1)
        ),
        "{fx:?}"
    );
    let fx = step.go(
        3,
        RunnerEvent::ProvisionFailed {
            reason: "no such base".into(),
            transient: false,
        },
        &mut judge,
    );
    assert_eq!(states(&fx), [JobState::InterventionRequired]);
    assert_eq!(step.job.reason_words().as_deref(), Some("no such base"));
}

#[test]
fn a_reclaimed_step_resumes_where_its_runner_died() {
    let mut judge = Judge::builtin();
    let mut s = Step::new(job(JobState::Provisioning), "r2");
    assert_eq!(
        s.go(1, RunnerEvent::Claimed { reclaimed: true }, &mut judge),
        [JobEffect::Provision {
            after: Duration::ZERO
        }]
    );
    let mut j = job(JobState::Executing);
    j.set_session("s9".into());
    let mut s = Step::new(j, "r2");
    let fx = s.go(1, RunnerEvent::Claimed { reclaimed: true }, &mut judge);
    assert_eq!(states(&fx), [JobState::Recovering]);
    assert!(
        s.job
            .reason_words()
            .as_deref()
            .unwrap()
            .contains("lease expired")
    );
    assert!(matches!(fx.last(), Some(JobEffect::Recover { session: Some(id), .. }) if id == "s9"));
    let mut j = job(JobState::Harvesting);
    j.set_session("s9".into());
    let mut s = Step::new(j, "r2");
    assert_eq!(
        s.go(1, RunnerEvent::Claimed { reclaimed: true }, &mut judge),
        [JobEffect::ReadSession("s9".into())]
    );
    let fx = s.go(2, RunnerEvent::SessionEnded(end(true, false)), &mut judge);
    assert!(matches!(fx[..], [JobEffect::Harvest { .. }]));
}

#[test]
fn no_progress_and_max_loops_stop_the_loop() {
    let mut judge = Judge::builtin();
    let mut j = job(JobState::Pending);
    j.spec.limits.no_progress = 2;
    let mut s = Step::new(j, "r1");
    full_step(&mut s, &mut judge, end(false, false), facts(true));
    assert_eq!(s.job.progress.empty_diffs, 1);
    assert_eq!(s.job.progress.same_findings, 1);
    // Back to PENDING as a reject would put it, same findings and an empty diff again.
    s.job.phase = crate::job::JobPhase::of(JobState::Pending, None, None);
    full_step(&mut s, &mut judge, end(false, false), facts(true));
    assert_eq!(
        (s.job.progress.empty_diffs, s.job.progress.same_findings),
        (2, 2)
    );
    let (_, seen) = judge.seen.last().unwrap();
    assert_eq!((seen.empty_diffs, seen.same_findings, seen.step), (2, 2, 2));
    // Max loops: the max_loops-th step ends as the policy says (a human may approve it)…
    let mut j = job(JobState::Pending);
    j.spec.limits.max_loops = 1;
    let mut s = Step::new(j, "r1");
    full_step(
        &mut s,
        &mut Judge::says(Ok(Approval::Human)),
        end(true, false),
        facts(false),
    );
    assert_eq!(s.job.state(), JobState::ApprovalRequired);
    // …a step past it (after a reject) that the policy would give a human is overruled…
    s.job.phase = crate::job::JobPhase::of(JobState::Pending, None, None);
    full_step(
        &mut s,
        &mut Judge::says(Ok(Approval::Human)),
        end(true, false),
        facts(false),
    );
    assert_eq!(s.job.state(), JobState::InterventionRequired);
    assert_eq!(
        s.job.reason_words().as_deref(),
        Some(
            "max loops passed: 2 steps since creation or the last resubmit \
             (limits.max_loops = 1)"
        )
    );
    // …but not one it approves.
    s.job.phase = crate::job::JobPhase::of(JobState::Pending, None, None);
    full_step(
        &mut s,
        &mut Judge::says(Ok(Approval::Approve)),
        end(true, false),
        facts(false),
    );
    assert_eq!(s.job.state(), JobState::Success);
}

#[test]
fn a_panel_is_asked_and_aggregated_before_the_machine_moves() {
    let verdict = |who: &str, v: &str| PanelVerdict {
        auditor: who.into(),
        verdict: crate::job::record::PanelWord::read(v),
        reason: format!("{who} thinks {v}"),
        confidence: None,
    };
    for (how, want) in [
        ("all", JobState::InterventionRequired),
        ("majority", JobState::ApprovalRequired),
    ] {
        let mut j = job(JobState::Pending);
        j.spec.panel = vec!["cmd:a".into(), "cmd:b".into(), "cmd:c".into()];
        j.spec.aggregate = how.parse().unwrap();
        let mut s = Step::new(j, "r1");
        let mut judge = Judge::builtin();
        let fx = full_step(&mut s, &mut judge, end(true, false), facts(false));
        assert!(
            matches!(fx.last(), Some(JobEffect::Audit(p)) if p.len() == 3),
            "{fx:?}"
        );
        assert_eq!(
            s.job.state(),
            JobState::Harvesting,
            "nothing moves before the panel answers"
        );
        let fx = s.go(
            20,
            RunnerEvent::Audited(vec![
                verdict("a", "done"),
                verdict("b", "done"),
                verdict("c", "retry"),
            ]),
            &mut judge,
        );
        assert_eq!(s.job.state(), want, "{how}");
        let panel_art = fx.iter().find_map(|e| match e {
            JobEffect::AddArtifact(a) => Some(a.panel.len()),
            _ => None,
        });
        assert_eq!(panel_art, Some(3));
        let (result, _) = judge.seen.last().unwrap();
        assert_eq!(result.panel.len(), 3);
        assert_eq!(result.panel_passed, Some(how == "majority"), "{how}");
        // The session itself completed; only the panel's aggregate says otherwise.
        assert_eq!(result.outcome, "COMPLETED");
        assert_eq!(result.completed, how == "majority", "{how}");
        if how == "all" {
            assert!(
                result.reason.as_deref().unwrap().contains("c said retry"),
                "{result:?}"
            );
            let why = s.job.reason_words().unwrap_or_default();
            assert!(
                why.contains("the panel did not pass") && !why.contains("ended COMPLETED"),
                "{why}"
            );
        }
    }
}

#[test]
fn events_a_state_does_not_expect_change_nothing() {
    let mut judge = Judge::builtin();
    for state in JobState::ALL {
        let j = job(state);
        let mut s = Step::new(j.clone(), "r1");
        let fx = s.step(1, RunnerEvent::Audited(vec![]), &mut judge);
        if state != JobState::Harvesting {
            assert_eq!(
                fx,
                Err(StepError::Unexpected {
                    event: "audited",
                    state
                })
            );
            assert_eq!(s.job, j);
        }
    }
}

#[test]
fn a_reject_feeds_the_next_prompt() {
    let mut j = job(JobState::ApprovalRequired);
    let cx = verbs::VerbContext {
        actor: "ana".into(),
        now_ms: 5,
        feedback: Some("the test still fails on empty input".into()),
        previous: Some("I fixed it ( 1 file changed)".into()),
        ..Default::default()
    };
    let (after, t, audit) = verbs::apply(&j, crate::job::JobTrigger::Reject, &cx).unwrap();
    assert_eq!(
        (t.from, t.to),
        (JobState::ApprovalRequired, JobState::Pending)
    );
    assert_eq!(audit.actor, "ana");
    assert_eq!(
        audit.metadata["feedback"],
        "the test still fails on empty input"
    );
    let p = prompt(&after);
    assert!(p.starts_with("fix the test\n\nPREVIOUS ATTEMPT: I fixed it ( 1 file changed)\nCRITIQUE: the test still fails on empty input\nINSTRUCTION: Improve the previous attempt"), "{p}");
    // Without feedback, refused; a verb the state does not allow, refused with the matrix's words.
    let mut cx2 = cx.clone();
    cx2.feedback = Some("  ".into());
    assert!(matches!(
        verbs::apply(&j, crate::job::JobTrigger::Reject, &cx2),
        Err(verbs::VerbError::NoFeedback { .. })
    ));
    j.phase = crate::job::JobPhase::of(JobState::Pending, None, None);
    let e = verbs::apply(&j, crate::job::JobTrigger::Approve, &cx).unwrap_err();
    assert_eq!(
        e.to_string(),
        "job job-0000abcd: approve is not allowed in PENDING; PENDING allows: step, suspend, cancel"
    );
}

#[test]
fn a_harvest_out_of_space_leaves_the_job_in_harvesting_for_the_next_runner() {
    let mut judge = Judge::builtin();
    let mut s = Step::new(job(JobState::Pending), "r1");
    s.go(10, RunnerEvent::Claimed { reclaimed: false }, &mut judge);
    s.go(11, RunnerEvent::Provisioned(ws()), &mut judge);
    s.go(12, RunnerEvent::SessionEnded(end(true, false)), &mut judge);
    assert_eq!(s.job.state(), JobState::Harvesting);
    let before = s.job.clone();
    let full = "`git add -A` failed: No space left on device";
    let fx = s.go(
        13,
        RunnerEvent::HarvestFailed {
            reason: full.into(),
            out_of_space: true,
        },
        &mut judge,
    );
    // Nothing to save (there is no room to), nothing for a human: the step stops as it is.
    assert_eq!(
        fx,
        [JobEffect::Abandon {
            reason: format!("harvest failed: {full}")
        }]
    );
    assert_eq!(s.job, before);
    assert!(judge.seen.is_empty());

    // The next runner reclaims it in HARVESTING and harvests the same session's end.
    let mut again = Step::new(before, "r2");
    let fx = again.go(20, RunnerEvent::Claimed { reclaimed: true }, &mut judge);
    assert_eq!(fx, [JobEffect::ReadSession("s1".into())]);
    again.go(21, RunnerEvent::SessionEnded(end(true, false)), &mut judge);
    let fx = again.go(22, RunnerEvent::Harvested(facts(false)), &mut judge);
    assert_eq!(states(&fx), [JobState::ApprovalRequired]);

    // Any other harvest failure is the job's: a human looks.
    let mut j = job(JobState::Harvesting);
    j.set_session("s1".into());
    let mut s = Step::new(j, "r1");
    let fx = s.go(
        5,
        RunnerEvent::HarvestFailed {
            reason: "the workspace is on main".into(),
            out_of_space: false,
        },
        &mut judge,
    );
    assert_eq!(states(&fx), [JobState::InterventionRequired]);
    assert_eq!(fx.last(), Some(&JobEffect::Done));
}

#[test]
fn the_harvest_commit_names_the_job_and_the_agent_that_worked() {
    let mut j = job(JobState::Pending);
    j.spec.worker = "claude:sonnet".into();
    let mut s = Step::new(j, "r1");
    let mut judge = Judge::builtin();
    s.go(1, RunnerEvent::Claimed { reclaimed: false }, &mut judge);
    s.go(2, RunnerEvent::Provisioned(ws()), &mut judge);
    let fx = s.go(3, RunnerEvent::SessionEnded(end(true, false)), &mut judge);
    let Some(JobEffect::Harvest { message }) = fx.last() else {
        panic!("{fx:?}")
    };
    assert_eq!(
        message,
        "fix the test\n\nJob: job-0000abcd (step 1)\nSession: s1\nCo-authored-by: Claude <noreply@anthropic.com>"
    );
}
