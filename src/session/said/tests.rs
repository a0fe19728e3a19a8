use super::*;
use crate::machine::SessionState as S;
use crate::process::ProcessIdentity;
use crate::session::record::Record;
use crate::session::tests::script::{Driver, Run, policy};
use crate::session::{Event, ExitStatus};

const RETRY: &str = "VERDICT: RETRY\nREASON: not yet";
const DONE: &str = "VERDICT: DONE";

fn said(id: &str, text: &str) -> Said {
    Said {
        id: id.into(),
        actor: "ann".into(),
        ts: 1_700_000_000_000,
        text: text.into(),
        now: false,
        status: MessageStatus::Received,
        taken_ms: None,
        taken_iteration: None,
    }
}

fn started() -> Event {
    Event::Spawned(ProcessIdentity {
        pid: 4242,
        pgid: 4242,
        start_time: Some(7),
    })
}

fn exited(out: &str) -> Event {
    Event::Exited {
        exit: ExitStatus {
            code: Some(0),
            signal: None,
        },
        tail: out.into(),
        stdout: out.into(),
    }
}

fn statuses(d: &Driver, id: &str) -> Vec<MessageStatus> {
    d.records
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) if m.id == id => Some(m.status),
            _ => None,
        })
        .collect()
}

fn delivered(effects: &[Effect]) -> Vec<Say> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Deliver(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_message_reaches_the_running_worker_and_is_recorded_as_it_moves() {
    let mut d = Driver::new(policy("return {}"), "fix it", []);
    d.step(Event::Start);
    d.step(started());
    let effects = d.step(Event::MessageSaid(said("m1", "look at parse.rs first")));
    assert_eq!(
        delivered(&effects),
        [Say {
            id: "m1".into(),
            text: "look at parse.rs first".into(),
            now: false
        }]
    );
    assert!(
        effects.contains(&Effect::Journal),
        "kept before it is handed on"
    );
    d.step(Event::MessageDelivered {
        id: "m1".into(),
        delivery: Delivery::Sent,
    });
    d.step(Event::MessageTaken { id: "m1".into() });
    assert_eq!(
        statuses(&d, "m1"),
        [
            MessageStatus::Received,
            MessageStatus::Sent,
            MessageStatus::Taken
        ]
    );
    let m = &d.session.messages[0];
    assert_eq!(m.status, MessageStatus::Taken);
    assert_eq!(m.taken_iteration, Some(1));
    // The same message read again (an inbox file not yet removed) changes nothing.
    let again = d.step(Event::MessageSaid(said("m1", "look at parse.rs first")));
    assert!(again.is_empty(), "{again:?}");
    assert_eq!(d.session.messages.len(), 1);
}

#[test]
fn a_message_said_before_the_worker_runs_goes_into_its_prompt() {
    let mut d = Driver::new(policy("return {}"), "fix it", []);
    // Nobody drives the session yet: the message waits in it (the engine reads the inbox
    // before it starts).
    d.step(Event::MessageSaid(said("early", "use the v2 API")));
    let effects = d.step(Event::Start);
    let spawn = effects
        .iter()
        .find_map(|e| match e {
            Effect::Spawn(s) => Some(s.clone()),
            _ => None,
        })
        .expect("a worker");
    assert!(spawn.prompt.starts_with("fix it"), "{}", spawn.prompt);
    assert!(
        spawn.prompt.contains("ann: use the v2 API"),
        "{}",
        spawn.prompt
    );
    assert_eq!(d.session.worker_prompt, spawn.prompt, "stored as given");
    let journal = effects.iter().rposition(|e| *e == Effect::Journal).unwrap();
    let spawn_at = effects
        .iter()
        .position(|e| matches!(e, Effect::Spawn(_)))
        .unwrap();
    assert!(journal < spawn_at, "journaled before the worker starts");
    assert_eq!(
        statuses(&d, "early"),
        [MessageStatus::Received, MessageStatus::InPrompt]
    );
}

#[test]
fn a_message_the_run_did_not_take_in_goes_into_the_next_prompt() {
    let mut d = Driver::new(
        policy("return {}"),
        "fix it",
        [
            Run::Exit(0, RETRY),
            Run::Exit(0, "again"),
            Run::Exit(0, DONE),
        ],
    );
    d.step(Event::Start);
    d.step(started());
    d.step(Event::MessageSaid(said("m2", "also update the docs")));
    // A command worker cannot take it mid-run.
    d.step(Event::MessageDelivered {
        id: "m2".into(),
        delivery: Delivery::NextPrompt,
    });
    d.step(Event::MessageSaid(said("m3", "and the changelog")));
    d.step(Event::MessageDelivered {
        id: "m3".into(),
        delivery: Delivery::Sent,
    });
    // A resume in the middle keeps them.
    d.reload_from_disk();
    assert_eq!(d.session.messages.len(), 2);
    let outcome = d.drive(exited("first try")).expect("finishes");
    assert_eq!(outcome.state, S::Completed);
    let prompts: Vec<String> = d
        .steps
        .iter()
        .flatten()
        .filter_map(|e| match e {
            Effect::Spawn(s) if s.role == Role::Worker => Some(s.prompt.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert!(!prompts[0].contains("also update the docs"));
    assert!(
        prompts[1].contains("ann: also update the docs"),
        "{}",
        prompts[1]
    );
    assert!(
        prompts[1].contains("ann: and the changelog"),
        "{}",
        prompts[1]
    );
    assert_eq!(
        statuses(&d, "m3"),
        [
            MessageStatus::Received,
            MessageStatus::Sent,
            MessageStatus::NextPrompt,
            MessageStatus::InPrompt
        ],
        "sent but not taken in before the run ended"
    );
    assert!(
        d.session
            .messages
            .iter()
            .all(|m| m.status == MessageStatus::InPrompt && m.taken_iteration == Some(2))
    );
}

#[test]
fn a_message_said_while_the_auditor_runs_waits_for_the_next_worker() {
    let mut d = Driver::new(policy("return {}"), "fix it", [Run::Exit(0, "done it")]);
    d.run();
    // Script ran out at the auditor's spawn: it is starting.
    assert_eq!(d.session.state(), S::AuditorExecuting);
    d.step(started());
    let effects = d.step(Event::MessageSaid(said("m4", "stop after this")));
    assert!(delivered(&effects).is_empty(), "{effects:?}");
    assert_eq!(d.session.messages[0].status, MessageStatus::Received);
}

#[test]
fn secrets_in_a_message_are_redacted_before_they_are_kept() {
    let mut d = Driver::new(
        policy(r#"return { redact = { "tok-[0-9]+" } }"#),
        "fix it",
        [],
    );
    d.step(Event::MessageSaid(said("m5", "use tok-12345 to log in")));
    assert!(!d.session.messages[0].text.contains("tok-12345"));
    let json = serde_json::to_string(&d.records).unwrap();
    assert!(!json.contains("tok-12345"), "{json}");
}

#[test]
fn a_message_no_worker_will_hear_is_said_when_the_session_ends() {
    let mut d = Driver::new(policy("return {}"), "fix it", [Run::Exit(0, DONE)]);
    d.step(Event::Start);
    d.step(started());
    d.step(Event::MessageSaid(said("late", "one more thing")));
    d.step(Event::MessageDelivered {
        id: "late".into(),
        delivery: Delivery::NextPrompt,
    });
    let outcome = d.drive(exited("done")).expect("finishes");
    assert_eq!(outcome.state, S::Completed);
    let warnings: Vec<String> = d
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Warning(m) => Some(m.message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("no worker was given message late from ann"),
        "{warnings:?}"
    );
}

#[test]
fn a_message_the_agent_refused_goes_into_the_next_prompt() {
    let mut d = Driver::new(policy("return {}"), "fix it", []);
    d.step(Event::Start);
    d.step(started());
    d.step(Event::MessageSaid(said("r1", "try the other branch")));
    d.step(Event::MessageDelivered {
        id: "r1".into(),
        delivery: Delivery::Sent,
    });
    // Refused after it was sent: it waits for the next prompt.
    d.step(Event::MessageDelivered {
        id: "r1".into(),
        delivery: Delivery::NextPrompt,
    });
    assert_eq!(d.session.messages[0].status, MessageStatus::NextPrompt);
    // A late "held" for it changes nothing: only a refusal moves a message already given.
    d.step(Event::MessageDelivered {
        id: "r1".into(),
        delivery: Delivery::Held,
    });
    assert_eq!(d.session.messages[0].status, MessageStatus::NextPrompt);
}
