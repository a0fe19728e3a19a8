//! Iterations read back from logs the decision core wrote (scripted runs), with the agent
//! lines an engine would have logged in between.

use super::*;
use crate::session::tests::script::{Driver, Run as Script};
use crate::store::{Activity, record::blob::Blobber};

const CLAUDE_TOOL: &str = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cargo test"}}]}}"#;
const CLAUDE_RESULT: &str = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"3 passed","is_error":false}]}}"#;
const CLAUDE_TEXT: &str =
    r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"All green."}]}}"#;

/// The log of a session that retried once, with Claude's lines for each worker run and a
/// command auditor's output.
fn log() -> Log {
    log_with(&[])
}

/// [`log`] with `extra` written after each worker run's agent lines.
fn log_with(extra: &[Record]) -> Log {
    let mut d = Driver::new(
        crate::policy::PolicyHost::builtin(),
        "fix it",
        [
            Script::Exit(0, "w"),
            Script::Exit(0, "VERDICT: RETRY add a test"),
            Script::Exit(0, "w"),
            Script::Exit(0, "VERDICT: DONE fine"),
        ],
    );
    d.changes.push_back(vec!["a.rs"]);
    d.run();
    let mut records = Vec::new();
    for r in &d.records {
        records.push(r.clone());
        if let Record::Process(p) = r
            && let ProcessEvent::Started { .. } = p.event
        {
            let line = |executor: &str, stream, data: &str| {
                Record::Activity(Activity {
                    ts: p.ts,
                    role: p.role,
                    iteration: p.iteration,
                    executor: executor.into(),
                    stream,
                    partial: false,
                    data: serde_json::from_str(data).unwrap_or(Value::String(data.into())),
                })
            };
            match p.role {
                Role::Worker => {
                    records.push(line("claude", Stream::Stdout, CLAUDE_TOOL));
                    records.push(line("claude", Stream::Stdout, CLAUDE_RESULT));
                    records.push(line("claude", Stream::Stderr, "a warning"));
                    records.push(line("claude", Stream::Stdout, CLAUDE_TEXT));
                    records.extend(extra.iter().cloned());
                }
                Role::Auditor => records.push(line("command", Stream::Stdout, "checked")),
            }
        }
    }
    let mut blobber = Blobber::default();
    let redactor = crate::redact::Redactor::new(&[], Vec::new()).unwrap();
    let values = records
        .iter()
        .flat_map(|r| blobber.encode(r, &redactor).unwrap())
        .collect();
    Log::decode(values)
}

#[test]
fn each_iteration_has_its_runs_account_verdict_and_outcome() {
    let its = read(&log());
    assert_eq!(its.len(), 2);
    let first = &its[0];
    assert_eq!(first.number, 1);
    assert_eq!(first.worker.len(), 1);
    let w = &first.worker[0];
    assert_eq!(w.executor, "claude");
    assert_eq!(w.prompt, "fix it");
    assert_eq!(
        w.lines,
        [
            RunLine::Entry {
                entry: Entry::Tool {
                    name: "Bash".into(),
                    input: "cargo test".into()
                }
            },
            RunLine::Entry {
                entry: Entry::Outcome {
                    ok: true,
                    text: "3 passed".into()
                }
            },
            RunLine::Output {
                stream: Stream::Stderr,
                text: "a warning".into()
            },
            RunLine::Entry {
                entry: Entry::Said {
                    text: "All green.".into()
                }
            },
        ]
    );
    assert_eq!(first.changed_files, ["a.rs"]);
    assert_eq!(first.auditor[0].executor, "command");
    assert_eq!(
        first.auditor[0].lines,
        [RunLine::Output {
            stream: Stream::Stdout,
            text: "checked".into()
        }]
    );
    let v = first.verdict.as_ref().unwrap();
    assert_eq!(
        (v.verdict, v.reason.as_deref()),
        ("retry", Some("add a test"))
    );
    assert!(
        its[1].worker[0].prompt.contains("add a test"),
        "the critique"
    );
    assert_eq!(its[1].verdict.as_ref().unwrap().verdict, "done");
    assert_eq!(its[1].outcome.as_ref().unwrap().code(), "done");
    // The JSON a dashboard reads.
    let json = serde_json::to_value(&its[0]).unwrap();
    assert_eq!(json["worker"][0]["lines"][0]["kind"], "entry");
    assert_eq!(json["worker"][0]["lines"][0]["entry"], "tool");
    assert_eq!(json["worker"][0]["lines"][2]["kind"], "output");
}

#[test]
fn only_the_last_lines_of_a_long_run_are_kept() {
    let mut open = Open {
        run: Run {
            role: Role::Worker,
            executor: "command".into(),
            prompt: String::new(),
            started_ms: 0,
            ended_ms: None,
            exit_code: None,
            signal: None,
            lines: Vec::new(),
            earlier: 0,
            spent: Spent::default(),
        },
        iteration: 1,
        lines: VecDeque::new(),
        reader: None,
    };
    for i in 0..MAX_LINES + 5 {
        open.push(RunLine::Output {
            stream: Stream::Stdout,
            text: i.to_string(),
        });
    }
    let (_, run) = open.close();
    assert_eq!(run.lines.len(), MAX_LINES);
    assert_eq!(run.earlier, 5);
    assert_eq!(
        run.lines[0],
        RunLine::Output {
            stream: Stream::Stdout,
            text: "5".into()
        }
    );
}

#[test]
fn a_refused_connection_is_a_line_of_the_run_that_asked() {
    let refusal = crate::session::record::EgressRefusal {
        ts: 1,
        host: "evil.example".into(),
        port: 443,
        agent: "claude".into(),
        role: Role::Worker,
        rule: "not on the policy's allowlist".into(),
        address: None,
        hint: crate::session::record::allow_hint("evil.example"),
    };
    let its = read(&log_with(&[Record::Egress(refusal)]));
    let w = &its[0].worker[0];
    let egress: Vec<&RunLine> = w
        .lines
        .iter()
        .filter(|l| matches!(l, RunLine::Egress { .. }))
        .collect();
    assert_eq!(egress.len(), 1, "{:?}", w.lines);
    let RunLine::Egress { host, port, text } = egress[0] else {
        unreachable!()
    };
    assert_eq!((host.as_str(), *port), ("evil.example", 443));
    assert_eq!(
        text,
        "egress refused: worker (claude) → evil.example:443 — not on the policy's allowlist; \
         to allow: network = { allow = { \"evil.example\" } }"
    );
    // The auditor's runs did not ask, so they show none.
    assert!(
        !its[0].auditor[0]
            .lines
            .iter()
            .any(|l| matches!(l, RunLine::Egress { .. }))
    );
    let json = serde_json::to_value(egress[0]).unwrap();
    assert_eq!(json["kind"], "egress");
}
