//! An auditor whose answer holds no verdict is asked again, within `limits.verdict_reasks`,
//! with a note of what was missing; no worker iteration is spent on it (issue: paid work
//! thrown away on an auditor's formatting).

use super::script::{Driver, Run, policy};
use crate::machine::SessionState as S;
use crate::policy::PolicyHost;
use crate::process::Role;
use crate::session::record::{ProcessEvent, Record};
use crate::session::{Effect, Reason, Report};

/// The prompts the auditor was started with, in order.
fn audit_prompts(d: &Driver) -> Vec<String> {
    d.records
        .iter()
        .filter_map(|r| match r {
            Record::Process(p) if p.role == Role::Auditor => match &p.event {
                ProcessEvent::Started { prompt, .. } => Some(prompt.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn the_auditor_is_asked_again_and_its_verdict_counts() {
    let mut d = Driver::new(
        PolicyHost::builtin(),
        "fix it",
        [
            Run::Exit(0, "fixed"),
            Run::Exit(0, "hmm, looks fine I guess"),
            Run::Exit(0, "VERDICT: DONE all good"),
        ],
    );
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Completed);
    assert_eq!(d.session.iteration, 1, "no worker iteration spent on it");
    let prompts = audit_prompts(&d);
    assert_eq!(prompts.len(), 2);
    assert!(!prompts[0].contains("held no verdict"));
    assert!(
        prompts[1].starts_with("Your previous answer to the request below held no verdict"),
        "{}",
        prompts[1]
    );
    assert!(
        prompts[1].ends_with(&prompts[0]),
        "the request follows the note"
    );
    // Said to the user, and no transition for it: the session stayed AUDITOR_EXECUTING.
    let said = d.steps.iter().flatten().any(|e| {
        matches!(e, Effect::Report(Report::Note(n)) if n.contains("asking it again (1 of 2, limits.verdict_reasks)"))
    });
    assert!(said);
    assert_eq!(
        d.trace(),
        [
            S::Created,
            S::WorkerExecuting,
            S::AuditPending,
            S::AuditorExecuting,
            S::Completed
        ]
    );
}

#[test]
fn an_empty_answer_is_named_and_the_reasks_are_bounded() {
    let mut d = Driver::new(
        PolicyHost::builtin(),
        "fix it",
        [
            Run::Exit(0, "fixed"),
            Run::Exit(0, ""),
            Run::Exit(0, "  "),
            Run::Exit(0, ""),
        ],
    );
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert_eq!(d.session.iteration, 1);
    assert_eq!(
        audit_prompts(&d).len(),
        3,
        "the first answer and two re-asks"
    );
    let reason = o.reason.unwrap();
    assert_eq!(reason.code(), "no_verdict");
    assert_eq!(
        reason.to_string(),
        "the auditor gave no verdict in 3 answers: its answer on stdout was empty"
    );
}

#[test]
fn the_policy_chooses_none_or_retry() {
    // A hook that answers "none" asks again with its own words; `verdict_reasks = 0` fails at
    // once.
    let p = policy(
        "return { limits = { verdict_reasks = 0 }, \
           verdict = function(o) return 'none', 'say PASS or FAIL' end }",
    );
    let mut d = Driver::new(p, "t", [Run::Exit(0, "w"), Run::Exit(0, "meh")]);
    let o = d.run().unwrap();
    assert_eq!(o.state, S::Failed);
    assert_eq!(
        o.reason,
        Some(Reason::NoVerdict {
            answers: 1,
            reason: Some("say PASS or FAIL".into())
        })
    );
    // A hook that answers "retry" spends an iteration, as it says.
    let p = policy(
        "return { limits = { max_iterations = 2 }, \
           verdict = function(o) return 'retry', 'unclear' end }",
    );
    let mut d = Driver::new(
        p,
        "t",
        [
            Run::Exit(0, "w"),
            Run::Exit(0, "meh"),
            Run::Exit(0, "w"),
            Run::Exit(0, "meh"),
        ],
    );
    let o = d.run().unwrap();
    assert_eq!(o.reason.unwrap().code(), "max_iterations");
    assert_eq!(d.session.iteration, 2);
    assert_eq!(audit_prompts(&d).len(), 2);
}
