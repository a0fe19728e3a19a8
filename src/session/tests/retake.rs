//! A session that failed only because its policy failed is taken up again under a corrected
//! policy: the failed question is asked again where it was asked, and the worker's work is kept
//! (never run again for it).

use super::script::{Driver, Run, policy};
use crate::machine::SessionState as S;
use crate::process::Role;
use crate::session::{Effect, Event, Phase, Reason};

const BROKEN_VERDICT: &str = "return { verdict = function(o) error('boom') end }";

/// How many times `role` was asked to start.
fn spawns(d: &Driver, role: Role) -> usize {
    d.steps
        .iter()
        .flatten()
        .filter(|e| matches!(e, Effect::Spawn(s) if s.role == role))
        .count()
}

#[test]
fn a_failed_verdict_hook_is_asked_again_and_the_worker_is_not_rerun() {
    let mut d = Driver::new(
        policy(BROKEN_VERDICT),
        "fix it",
        [Run::Exit(0, "fixed"), Run::Exit(0, "VERDICT: DONE good")],
    );
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert_eq!(o.reason.as_ref().unwrap().code(), "policy_error");
    assert_eq!(
        d.session.phase.retake().map(Phase::state),
        Some(S::AuditorExecuting)
    );
    // What a resume reads back, then the corrected policy.
    d.reload_from_disk();
    d.policy = policy("return {}");
    let o = d.drive(Event::Start).unwrap();
    assert_eq!(o.state, S::Completed, "{:?}", d.trace());
    assert_eq!(spawns(&d, Role::Worker), 1, "the worker's work was kept");
    assert_eq!(
        spawns(&d, Role::Auditor),
        1,
        "its answer was judged again, not asked again"
    );
    let retake = d
        .session
        .history
        .iter()
        .find_map(|h| match &h.reason {
            Some(Reason::Retake { hook, .. }) => Some((h.state, hook.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(retake, (S::AuditorExecuting, "verdict".to_string()));
    assert_eq!(d.session.iteration, 1);
}

#[test]
fn a_failed_salvage_or_next_prompt_is_asked_again_where_it_failed() {
    // salvage: RECOVERY_PENDING with the evidence kept.
    let mut d = Driver::new(
        policy("return { salvage = function() error('no') end }"),
        "t",
        [Run::Exit(3, "crashed")],
    );
    d.changes.push_back(vec!["half.rs"]);
    assert_eq!(d.run().unwrap().state, S::Failed);
    d.reload_from_disk();
    d.policy = policy(
        "return { salvage = function(ev) return 'success', #ev.changed_files .. ' kept' end }",
    );
    d.then([Run::Exit(0, "VERDICT: DONE ok")]);
    assert_eq!(d.drive(Event::Start).unwrap().state, S::Completed);
    assert_eq!(spawns(&d, Role::Worker), 1);
    assert!(d.session.history.iter().any(
        |h| matches!(&h.reason, Some(Reason::Salvaged { reason: Some(r), .. }) if r == "1 kept")
    ));

    // next_prompt: REITERATION_PENDING, then iteration 2 with the new prompt.
    let mut d = Driver::new(
        policy("return { next_prompt = function() error('typo') end }"),
        "t",
        [Run::Exit(0, "w"), Run::Exit(0, "VERDICT: RETRY more")],
    );
    assert_eq!(d.run().unwrap().state, S::Failed);
    d.reload_from_disk();
    d.policy =
        policy("return { next_prompt = function(ctx) return 'again: ' .. ctx.critique end }");
    d.then([Run::Exit(0, "w2"), Run::Exit(0, "VERDICT: DONE")]);
    assert_eq!(d.drive(Event::Start).unwrap().state, S::Completed);
    assert_eq!(d.session.iteration, 2);
    assert_eq!(d.session.worker_prompt, "again: more");
}

#[test]
fn a_failed_guard_is_asked_again_after_the_inspection() {
    let guard = |body: &str| {
        policy(&format!(
            "return {{ guards = {{ ['WORKER_EXECUTING -> AUDIT_PENDING'] = function() {body} end }} }}"
        ))
    };
    let mut d = Driver::new(
        guard("error('x')"),
        "t",
        [Run::Exit(0, "w"), Run::Exit(0, "VERDICT: DONE")],
    );
    assert_eq!(d.run().unwrap().state, S::Failed);
    d.reload_from_disk();
    d.policy = guard("return true");
    assert_eq!(d.drive(Event::Start).unwrap().state, S::Completed);
    assert_eq!(spawns(&d, Role::Worker), 1);
}

#[test]
fn a_veto_or_a_spent_budget_is_not_taken_up() {
    let mut d = Driver::new(
        policy(
            "return { guards = { ['AUDIT_PENDING -> AUDITOR_EXECUTING'] = function() return false, 'no' end } }",
        ),
        "t",
        [Run::Exit(0, "w")],
    );
    assert_eq!(d.run().unwrap().state, S::Failed);
    assert!(d.session.phase.retake().is_none(), "a veto is a decision");
    let mut d = Driver::new(
        policy("return { limits = { max_iterations = 1 } }"),
        "t",
        [Run::Exit(0, "w"), Run::Exit(0, "VERDICT: RETRY")],
    );
    assert_eq!(d.run().unwrap().state, S::Failed);
    assert!(d.session.phase.retake().is_none());
}
