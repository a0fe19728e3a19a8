//! The job page's attempts told as the agents' accounts (`super::account`), on a real SQLite
//! store: each agent's words, tools and outcomes from its protocol lines, never the JSON.

use super::tests::{TTL, pos, sealed, viewer, world};
use super::*;
use crate::engine::Stream;
use crate::job::decision::{JobDecision, Judgement};
use crate::job::record::{ArtifactVersion, Risk};
use crate::job::store::prelude::*;
use crate::job::store::{SessionEntry, SessionJournal};
use crate::job::{JobState, JobTrigger};
use crate::process::Role;
use crate::store::{Activity, Record};
use serde_json::json;

#[test]
fn the_job_page_tells_each_attempt_as_the_agents_account() {
    let w = world();
    let mut j = w.add("job-00000001", "Fix the parser", Risk::Medium, 10);
    let lease = w.claim(&mut j, "runner-a", TTL, 100);
    let activity = |line: &str| {
        Record::Activity(Activity {
            ts: 110,
            role: Role::Worker,
            iteration: 1,
            executor: "claude".into(),
            stream: Stream::Stdout,
            partial: false,
            data: serde_json::from_str(line).unwrap(),
        })
    };
    let records = [
        activity(
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"I will run the tests."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cargo test"}}]}}"#,
        ),
        activity(
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"12 passed","is_error":false}]}}"#,
        ),
    ];
    let mut entries: Vec<_> = records
        .iter()
        .map(|r| SessionEntry {
            seq: 0,
            session: "s-1".into(),
            record: serde_json::to_value(r).unwrap(),
            log_end: 1,
        })
        .collect();
    entries.push(SessionEntry {
        seq: 0,
        session: "s-1".into(),
        record: json!({"type": "state_change", "ts": 120, "from": "WORKER_EXECUTING",
            "to": "AUDIT_PENDING", "iteration": 1, "policy_hash": "h", "generation": 1}),
        log_end: 2,
    });
    entries.push(SessionEntry {
        seq: 0,
        session: "s-1".into(),
        record: json!({"type": "check", "ts": 122, "iteration": 1, "name": "tests",
            "run": "cargo test", "exit_code": 101, "duration_ms": 1500, "tail": "1 failed"}),
        log_end: 3,
    });
    // The auditor's verdict as the policy read it (a record as the log writes it).
    entries.push(SessionEntry {
        seq: 0,
        session: "s-1".into(),
        record: serde_json::from_str(r#"{"type":"decision","ts":122,"hook":"verdict","state":"AUDITOR_EXECUTING","iteration":1,"generation":1,"policy_hash":"sha256:0123456789abcdef","builtin":false,"duration_us":42,"input":{"ctx":{"auditor_output":"VERDICT: RETRY","changed_files":[],"confidence":null,"critique":null,"elapsed":12.5,"exit_code":0,"iteration":1,"max_iterations":5,"reason":null,"session_id":"s-1","state":"AUDITOR_EXECUTING","task":"t","verdict":null,"workdir":"/w","worker_output":"","worker_prompt":"t"},"output":"VERDICT: RETRY"},"result":{"confidence":0.4,"reason":"the <tests> fail","verdict":"retry"}}"#).unwrap(),
        log_end: 3,
    });
    // A burst of stderr: the first lines, then a count of the rest.
    for n in 0..5 {
        entries.push(SessionEntry {
            seq: 0,
            session: "s-1".into(),
            record: json!({"type": "activity", "ts": 123, "role": "auditor", "iteration": 1,
                "executor": "codex", "stream": "stderr", "data": format!("trace line {n}")}),
            log_end: 3,
        });
    }
    for (turns, usd) in [(2, 0.01), (3, 0.02)] {
        entries.push(SessionEntry {
            seq: 0,
            session: "s-1".into(),
            record: json!({"type": "process", "ts": 121, "role": "worker", "iteration": 1,
                "event": "agent_usage", "turns": turns, "tokens": 1000, "usd": usd}),
            log_end: 3,
        });
    }
    let sealed_entries: Vec<_> = entries.iter().map(sealed).collect();
    w.at(120)
        .add_session_entries(&lease, &sealed_entries)
        .unwrap();
    w.at(120)
        .put_journal(
            &lease,
            &sealed(&SessionJournal {
                session: "s-1".into(),
                runner: "runner-a".into(),
                shipped_ms: 0,
                state: json!({"not": "a session"}),
            }),
        )
        .unwrap();
    // A second session whose journal reads: its state and iteration.
    let session = crate::session::Session::new(
        crate::session::NewSession {
            id: "s-2".into(),
            task: "Fix the parser".into(),
            workdir: "/work".into(),
            worker_cmd: "claude".into(),
            auditor_cmd: "codex".into(),
        },
        crate::session::PolicyRef {
            path: None,
            hash: "builtin".into(),
            generation: 1,
            budget: None,
        },
        5,
        125,
    );
    w.at(125)
        .put_journal(
            &lease,
            &sealed(&SessionJournal {
                session: "s-2".into(),
                runner: "runner-a".into(),
                shipped_ms: 0,
                state: serde_json::to_value(&session).unwrap(),
            }),
        )
        .unwrap();
    let retry = JobDecision {
        seq: 0,
        job_id: j.id.clone(),
        step: 1,
        at_ms: 130,
        policy_hash: Some("sha256:feedfacecafe0000".into()),
        judgement: Judgement::Retry {
            failure: "the agent's API said 529".into(),
            retries: 0,
            attempts: 3,
            after_ms: Some(2_000),
        },
    };
    w.at(130).add_decision(&lease, &sealed(&retry)).unwrap();

    let page = job(
        w.at(140),
        "job-00000001",
        &viewer(false, false),
        w.state_dir(),
    )
    .unwrap();
    let attempt = &page[pos(&page, "id=\"session-s-1\"")..];
    // The account: what the agent said, the tool it ran and how it went — not the protocol.
    assert!(attempt.contains("I will run the tests."), "{attempt}");
    assert!(
        attempt.contains("$ <b>Bash</b> <code>cargo test</code>"),
        "{attempt}"
    );
    assert!(
        attempt.contains("→ ok: <span class=\"text\">12 passed</span>"),
        "{attempt}"
    );
    assert!(!attempt.contains("tool_use"), "{attempt}");
    assert!(
        attempt.contains("check <b>tests</b> failed (exit 101, 1.5s) <code>cargo test</code>"),
        "{attempt}"
    );
    assert!(
        attempt.contains(
            "<span class=\"hook\">verdict</span> → <b>RETRY</b> (confidence 0.40): the &lt;tests&gt; fail"
        ),
        "{attempt}"
    );
    assert!(attempt.contains("trace line 2") && !attempt.contains("trace line 3"));
    assert!(attempt.contains("… 2 more lines on stderr"), "{attempt}");
    // What the runs cost, summed over the attempt (dollars as an estimate).
    assert!(
        attempt.contains("The agents reported 5 turn(s), 2000 tokens, $0.0300 (an estimate)."),
        "{attempt}"
    );
    assert!(
        attempt.contains("<b>WORKER_EXECUTING</b> → <b>AUDIT_PENDING</b>"),
        "{attempt}"
    );
    // A journal that does not read says so; one that reads gives the session's state.
    let first = &attempt[..pos(attempt, "id=\"session-s-2\"")];
    assert!(first.contains("badge unknown"), "{first}");
    let second = &attempt[pos(attempt, "id=\"session-s-2\"")..];
    assert!(
        second.contains(
            "<span class=\"badge session\">CREATED</span> iteration 0/5 on <code>runner-a</code>"
        ),
        "{second}"
    );
    let said = pos(attempt, "I will run the tests.");
    assert!(
        said < pos(attempt, "cargo test") && pos(attempt, "cargo test") < pos(attempt, "12 passed")
    );
    // History, decisions, audit.
    let history = &page[pos(&page, "<section class=\"history\">")..];
    assert!(history.contains("<code>runner-a</code>"), "{history}");
    assert!(history.contains(">step<"), "{history}");
    let decisions = &page[pos(&page, "<section class=\"decisions\">")..];
    assert!(
        decisions.contains("the agent&#39;s API said 529"),
        "{decisions}"
    );
    assert!(decisions.contains("retry after 2s"), "{decisions}");
    let audit = &page[pos(&page, "<section class=\"audit\">")..];
    assert!(
        audit.contains("<b>ann</b>") && audit.contains(">create<"),
        "{audit}"
    );
    // The lease, live by the store's clock.
    assert!(page.contains("badge live"), "{page}");

    // Once harvested, the attempt shows its artifact.
    w.moved(
        &mut j,
        &lease,
        JobState::Executing,
        JobTrigger::Provisioned,
        150,
    );
    let v = ArtifactVersion {
        version: 0,
        step: 1,
        at_ms: 160,
        session: Some("s-1".into()),
        outcome: "COMPLETED".into(),
        commit: None,
        diff_hash: "sha256:abcdef0123456789".into(),
        diff_stat: "src/parse.rs | 4 ++--".into(),
        files: vec!["src/parse.rs".into()],
        final_message: String::new(),
        verdict: Some("done".into()),
        confidence: Some(0.75),
        panel: vec![],
    };
    w.at(160).add_artifact(&lease, &sealed(&v)).unwrap();
    let page = job(
        w.at(170),
        "job-00000001",
        &viewer(false, false),
        w.state_dir(),
    )
    .unwrap();
    let attempt = &page[pos(&page, "id=\"session-s-1\"")..];
    assert!(
        attempt.contains("<h3>step 1 · session <code>s-1</code></h3>"),
        "{attempt}"
    );
    assert!(attempt.contains("Artifact v1"), "{attempt}");
    assert!(attempt.contains("src/parse.rs | 4 ++--"));
    assert!(attempt.contains("<dd>0.75</dd>"), "{attempt}");
    assert!(attempt.contains("sha256:abcdef012345"), "{attempt}");
}
