//! Replay of a session a human spoke to: the messages are facts given again, so the worker
//! prompts that carried them come out the same.

use super::*;
use crate::policy::PolicyHost;
use crate::process::ProcessIdentity;
use crate::session::tests::script::{Driver, Run};
use crate::session::{Event, ExitStatus, MessageStatus, Said};
use crate::store::Log;
use crate::store::record::blob::Blobber;

#[test]
fn a_session_spoken_to_replays_with_the_same_prompts() {
    let mut d = Driver::new(
        PolicyHost::builtin(),
        "fix the parser",
        [
            Run::Exit(0, "VERDICT: RETRY\nREASON: the tests fail"),
            Run::Exit(0, "fixed"),
            Run::Exit(0, "VERDICT: DONE\nREASON: good"),
        ],
    );
    d.step(Event::Start);
    d.step(Event::Spawned(ProcessIdentity {
        pid: 77,
        pgid: 77,
        start_time: Some(1),
    }));
    d.step(Event::MessageSaid(Said {
        id: "m-1".into(),
        actor: "ann".into(),
        // Said a while before the session took it in: the prompt shows this time.
        ts: 1_700_000_000_000,
        text: "the fixture is in tests/data".into(),
        now: false,
        status: MessageStatus::Received,
        taken_ms: None,
        taken_iteration: None,
    }));
    d.step(Event::MessageDelivered {
        id: "m-1".into(),
        delivery: crate::agent::Delivery::NextPrompt,
    });
    d.drive(Event::Exited {
        exit: ExitStatus {
            code: Some(0),
            signal: None,
        },
        tail: "tried".into(),
        stdout: "tried".into(),
    })
    .expect("finishes");
    assert!(
        d.session
            .worker_prompt
            .contains("ann: the fixture is in tests/data")
    );
    let mut blobber = Blobber::default();
    let redactor = crate::redact::Redactor::new(&[], Vec::new()).unwrap();
    let values: Vec<_> = d
        .records
        .iter()
        .flat_map(|r| blobber.encode(r, &redactor).unwrap())
        .collect();
    let report = replay(&Log::decode(values), &PolicyHost::builtin()).unwrap();
    assert!(report.differences.is_empty(), "{report:#?}");
    assert!(report.errors.is_empty() && report.incomplete.is_empty());
    assert_eq!(report.simulated_path, report.recorded_path);
    assert_eq!(
        report.divergence, None,
        "the prompts carried the same message"
    );
    assert!(report.assumptions.is_empty(), "{:?}", report.assumptions);
}
