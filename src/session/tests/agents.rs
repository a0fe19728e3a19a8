//! What agents add to the session's paths: their own sessions continued, provider failures
//! retried with backoff or failed fast, tool requests answered by `permit`.

use super::script::{Driver, Run, policy};
use crate::agent::ErrorKind;
use crate::machine::SessionState as S;
use crate::policy::PolicyHost;
use crate::process::Role;
use crate::session::{Effect, Event, Reason};
use std::time::Duration;

const DONE: &str = "VERDICT: DONE";
const RETRY: &str = "VERDICT: RETRY\nREASON: not yet";

const RETRY_TWICE: &str =
    r#"return { limits = { retry = { attempts = 2, initial_delay = "1s", factor = 3 } } }"#;

fn spawns(d: &Driver) -> Vec<crate::session::Spawn> {
    d.steps
        .iter()
        .flatten()
        .filter_map(|e| match e {
            Effect::Spawn(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn transient_failures_are_retried_with_backoff_in_the_same_iteration() {
    let runs = [
        Run::AgentFails(ErrorKind::Server),
        Run::AgentFails(ErrorKind::Overloaded),
        Run::Exit(0, "fixed"),
        Run::Exit(0, DONE),
    ];
    let mut d = Driver::new(policy(RETRY_TWICE), "fix it", runs);
    d.run().unwrap();
    assert_eq!(d.session.state(), S::Completed);
    assert_eq!(d.session.iteration, 1, "a retry costs no iteration");
    let delays: Vec<Duration> = spawns(&d).iter().map(|s| s.delay).collect();
    assert_eq!(
        delays,
        [
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(3),
            Duration::ZERO
        ]
    );
    let snapshots = d
        .steps
        .iter()
        .flatten()
        .filter(|e| **e == Effect::Snapshot)
        .count();
    assert_eq!(snapshots, 1, "a retry keeps the first try's snapshot");
}

#[test]
fn exhausted_retries_fail_with_the_providers_error() {
    let runs = [
        Run::AgentFails(ErrorKind::Server),
        Run::AgentFails(ErrorKind::Server),
        Run::AgentFails(ErrorKind::Server),
    ];
    let mut d = Driver::new(policy(RETRY_TWICE), "fix it", runs);
    d.run().unwrap();
    assert_eq!(d.session.state(), S::Failed);
    let Some(Reason::AgentFailed { role, failure }) = d.session.last_reason().cloned() else {
        panic!("{:?}", d.session.last_reason());
    };
    assert_eq!(role, Role::Worker);
    assert!(
        failure.message.contains("after 2 retries"),
        "{}",
        failure.message
    );
    assert_eq!(d.session.last_reason().unwrap().code(), "agent_failed");
}

#[test]
fn refused_credentials_fail_at_once() {
    let mut d = Driver::new(
        PolicyHost::builtin(),
        "fix it",
        [Run::AgentFails(ErrorKind::Auth)],
    );
    d.run().unwrap();
    assert_eq!(d.session.state(), S::Failed);
    assert_eq!(spawns(&d).len(), 1, "never retried");
    let reason = d.session.last_reason().unwrap();
    assert_eq!(reason.code(), "agent_auth_failed");
    assert!(reason.to_string().contains("ANTHROPIC_API_KEY"), "{reason}");
}

#[test]
fn an_auditor_that_keeps_failing_fails_the_session() {
    let runs = [
        Run::Exit(0, "fixed"),
        Run::AgentFails(ErrorKind::RateLimit),
        Run::AgentFails(ErrorKind::RateLimit),
        Run::AgentFails(ErrorKind::RateLimit),
    ];
    let mut d = Driver::new(policy(RETRY_TWICE), "fix it", runs);
    d.run().unwrap();
    assert_eq!(d.session.state(), S::Failed);
    assert!(matches!(
        d.session.last_reason(),
        Some(Reason::AgentFailed {
            role: Role::Auditor,
            ..
        })
    ));
}

#[test]
fn the_next_iteration_continues_the_workers_own_session() {
    let runs = [
        Run::Agent("sid-1", "first try"),
        Run::Exit(0, RETRY),
        Run::Agent("sid-1", "second try"),
        Run::Exit(0, DONE),
    ];
    let mut d = Driver::new(PolicyHost::builtin(), "fix it", runs);
    d.run().unwrap();
    assert_eq!(d.session.agents.worker_session.as_deref(), Some("sid-1"));
    let resumes: Vec<Option<String>> = spawns(&d).into_iter().map(|s| s.resume).collect();
    assert_eq!(resumes, [None, None, Some("sid-1".into()), None]);

    let off = policy("return { continue_conversation = false }");
    let runs = [
        Run::Agent("sid-1", "first try"),
        Run::Exit(0, RETRY),
        Run::Agent("sid-2", "second try"),
        Run::Exit(0, DONE),
    ];
    let mut d = Driver::new(off, "fix it", runs);
    d.run().unwrap();
    assert!(spawns(&d).iter().all(|s| s.resume.is_none()));
}

#[test]
fn tool_requests_are_answered_by_permit_and_fail_closed() {
    let deny_rm = policy(
        r#"return { permit = function(tool, input, ctx)
             if input.command == "boom" then error("broken") end
             if input.command == "rm -rf /" then return "deny", "no" end
             return "allow"
           end }"#,
    );
    let mut d = Driver::new(deny_rm, "fix it", []);
    d.step(Event::Start);
    d.step(Event::Spawned(crate::process::ProcessIdentity {
        pid: 9,
        pgid: 9,
        start_time: None,
    }));
    let answer = |d: &mut Driver, command: &str| {
        let effects = d.step(Event::PermissionAsked {
            request_id: "r1".into(),
            tool: "Bash".into(),
            input: serde_json::json!({ "command": command }),
        });
        effects
            .into_iter()
            .find_map(|e| match e {
                Effect::Permit { allow, reason, .. } => Some((allow, reason)),
                _ => None,
            })
            .expect("an answer")
    };
    assert_eq!(answer(&mut d, "ls"), (true, None));
    assert_eq!(answer(&mut d, "rm -rf /"), (false, Some("no".into())));
    let (allow, reason) = answer(&mut d, "boom");
    assert!(!allow, "a failing hook denies");
    assert!(reason.unwrap().contains("permit fails closed"));
}

#[test]
fn a_spent_budget_fails_the_session_after_warnings() {
    let budget = policy("return { limits = { budget = { turns = 5 } } }");
    let runs = [
        Run::Spends(4, "worked"),
        Run::Spends(0, RETRY),
        Run::Spends(1, "worked more"),
        Run::Exit(0, DONE),
    ];
    let mut d = Driver::new(budget, "fix it", runs);
    d.run().unwrap();
    assert_eq!(d.session.state(), S::Failed);
    let reason = d.session.last_reason().unwrap().clone();
    assert_eq!(reason.code(), "budget_exceeded");
    assert!(reason.to_string().contains("5 used of 5"), "{reason}");
    assert_eq!(d.session.agents.spent.turns, 5);
    let warnings: Vec<String> = d
        .records
        .iter()
        .filter_map(|r| match r {
            crate::session::record::Record::Warning(w) => Some(w.message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("80% of the turns budget"),
        "{warnings:?}"
    );
}

#[test]
fn connections_are_answered_by_the_lists_the_agents_api_the_hook_and_fail_closed() {
    let p = policy(
        r#"return {
             network = { allow = { "pypi.org" }, deny = { "api.openai.com" } },
             egress = function(ctx, req)
               if req.host == "boom.test" then error("broken") end
               if req.host == "ok.test" then return "allow" end
             end,
           }"#,
    );
    let mut d = Driver::new(p, "fix it", []);
    d.step(Event::Start);
    let mut n = 0;
    let mut answer = |d: &mut Driver, agent: &str, host: &str| {
        n += 1;
        let effects = d.step(Event::EgressAsked {
            ask: n,
            query: crate::policy::EgressQuery {
                host: host.into(),
                port: 443,
                agent: agent.into(),
                role: crate::process::Role::Worker,
            },
        });
        effects
            .into_iter()
            .find_map(|e| match e {
                Effect::Egress {
                    ask, allow, rule, ..
                } if ask == n => Some((allow, rule)),
                _ => None,
            })
            .expect("an answer")
    };
    assert!(answer(&mut d, "sh", "pypi.org").0);
    // The agent's own model API is allowed by default, but a deny wins.
    let (allow, rule) = answer(&mut d, "claude", "api.anthropic.com");
    assert!(allow && rule.contains("claude's own model API"), "{rule}");
    assert!(!answer(&mut d, "codex", "api.openai.com").0);
    assert!(!answer(&mut d, "sh", "api.anthropic.com").0);
    assert!(answer(&mut d, "sh", "ok.test").0);
    let (allow, rule) = answer(&mut d, "sh", "other.test");
    assert!(!allow && rule == "not on the policy's allowlist", "{rule}");
    let (allow, rule) = answer(&mut d, "sh", "boom.test");
    assert!(!allow && rule.contains("egress fails closed"), "{rule}");
}
