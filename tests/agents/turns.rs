//! Turns that do not follow the one-prompt-one-answer pattern, driven against the real CLIs
//! (no oneshot involved) with the fake model server in its directed mode, where each answer
//! comes from the turn directives in the request itself (turns.md in the design notes):
//! Claude's autonomous turn after a background task, a user message queued behind a running
//! Claude turn, Codex's `turn/steer` into a running turn, and Gemini's second ACP prompt, which
//! cancels the first.

use super::claude::claude;
use super::harness::Sandbox;
use super::stdio::Session;

use crate::fake_model::{FakeModel, Request};
use serde_json::{Value, json};
use std::time::Duration;

/// Generous: these CLIs start in seconds on an idle machine, many more on a loaded one.
const WAIT: Duration = Duration::from_secs(40);

/// A Claude stream-json user line, with a `uuid` when given.
fn user_line(text: &str, uuid: Option<&str>) -> Value {
    let mut v = json!({"type": "user", "message": {"role": "user", "content": text},
                       "parent_tool_use_id": null, "session_id": ""});
    if let Some(u) = uuid {
        v["uuid"] = json!(u);
    }
    v
}

/// Claude in stream-json both ways with its permission questions on stdio (oneshot's flags),
/// then `extra`; `initialize` answered.
fn claude_session(sb: &Sandbox, model: &FakeModel, extra: &[&str]) -> Option<Session> {
    let mut c = claude(sb, model)?;
    c.args(["-p", "--input-format", "stream-json", "--output-format"])
        .args([
            "stream-json",
            "--verbose",
            "--permission-prompt-tool",
            "stdio",
        ])
        .args(extra);
    let mut s = Session::spawn(c);
    s.send(&json!({"type": "control_request", "request_id": "init-1",
                   "request": {"subtype": "initialize"}}));
    let init = s.wait_for(WAIT, |v| v["type"] == "control_response");
    assert_eq!(init["response"]["subtype"], "success", "{init}");
    Some(s)
}

/// The next Claude line satisfying `want`, allowing every tool Claude asks about on the way.
fn claude_wait(s: &mut Session, want: impl Fn(&Value) -> bool) -> Value {
    loop {
        let v = s.wait_for(WAIT, |v| {
            want(v) || (v["type"] == "control_request" && v["request"]["subtype"] == "can_use_tool")
        });
        if !want(&v) {
            s.send(
                &json!({"type": "control_response", "response": {"subtype": "success",
                "request_id": v["request_id"],
                "response": {"behavior": "allow", "updatedInput": v["request"]["input"]}}}),
            );
            continue;
        }
        return v;
    }
}

fn is_system(subtype: &'static str) -> impl Fn(&Value) -> bool {
    move |v: &Value| v["type"] == "system" && v["subtype"] == subtype
}

/// Every request's decision and body, for failure messages.
fn dump(model: &FakeModel) -> String {
    model
        .model_requests()
        .iter()
        .map(|r: &Request| format!("{:?}\n{}", r.decision, r.body_text()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Claude's autonomous turn: a background Bash (`[[bgbash:…]]`) ends the user's turn at once;
/// when the task finishes, with stdin still open and nothing sent, Claude reports it
/// (`task_updated` completed, `task_notification`), starts a turn of its own (a fresh `init`),
/// answers the `<task-notification>` it sent the model ("Notified: …"), and ends with a `result`
/// whose `origin` is the notification. A second cycle scripts that answer with
/// `[[onnotify:…]]`, and the first notification did not use it up.
#[test]
fn claude_background_task_wakes_the_agent_by_itself() {
    let model = FakeModel::directed();
    let sb = Sandbox::new();
    let Some(mut s) = claude_session(&sb, &model, &[]) else {
        return;
    };
    s.send(&user_line(
        "start it zqb1 [[bgbash:sleep 2; echo BG > bg.txt]]",
        None,
    ));
    let started = claude_wait(&mut s, is_system("task_started"));
    let task = started["task_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"));
    let first = claude_wait(&mut s, |v| v["type"] == "result");
    assert_eq!(first["subtype"], "success", "{first}");
    assert!(first.get("origin").is_none(), "{first}");
    let text = first["result"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("Tool finished. Command running in background with ID: "),
        "{text}"
    );
    assert!(!sb.work().join("bg.txt").exists(), "still running");

    let updated = claude_wait(&mut s, is_system("task_updated"));
    assert_eq!(updated["task_id"], task, "{updated}");
    assert_eq!(updated["patch"]["status"], "completed", "{updated}");
    let note = claude_wait(&mut s, is_system("task_notification"));
    assert_eq!(
        (note["task_id"].as_str(), note["status"].as_str()),
        (Some(task), Some("completed"))
    );
    claude_wait(&mut s, is_system("init"));
    let said = claude_wait(&mut s, |v| v["type"] == "assistant");
    let said = said["message"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(said.starts_with("Notified: <task-notification>"), "{said}");
    assert!(said.contains(task), "{said}");
    let woke = claude_wait(&mut s, |v| v["type"] == "result");
    assert_eq!(woke["origin"]["kind"], "task-notification", "{woke}");
    assert_eq!(woke["result"], said.as_str());
    assert_eq!(
        std::fs::read_to_string(sb.work().join("bg.txt")).unwrap(),
        "BG\n"
    );
    // The model saw the notification as the last user text of a request of its own.
    let last = model.model_requests().pop().unwrap();
    let messages = last.body["messages"].as_array().unwrap();
    let tail = messages.last().unwrap().to_string();
    assert!(
        tail.contains("<task-notification>") && tail.contains(task),
        "{tail}"
    );

    // Scripted: the next notification is answered by the latest `[[onnotify]]` (after a pause).
    s.send(&user_line(
        "again [[onnotify:hang=0.5;text=woke up zqb2]] [[bgbash:sleep 1]]",
        None,
    ));
    claude_wait(&mut s, |v| {
        v["type"] == "result" && v.get("origin").is_none()
    });
    let woke = claude_wait(&mut s, |v| v["type"] == "result");
    assert_eq!(woke["origin"]["kind"], "task-notification", "{woke}");
    assert_eq!(woke["result"], "woke up zqb2", "{}", dump(&model));
    let d = model.decisions();
    assert_eq!(d.len(), 6, "{d:#?}");
    assert_eq!(d[0], "bgbash: sleep 2; echo BG > bg.txt");
    assert!(
        d[1].starts_with("Tool finished. ") && d[2].starts_with("Notified: "),
        "{d:#?}"
    );
    assert_eq!(d[5], "hang 0.50s; woke up zqb2");
    s.close_stdin();
    assert_eq!(s.wait_exit(WAIT), Some(0));
}

/// With `--replay-user-messages`, a user line (with a `uuid`) sent while the model call of the
/// first turn hangs is queued: the first turn ends with its own answer, the message comes back
/// as an `isReplay` user line with our uuid, and it runs as a turn of its own whose request
/// ends with it alone.
#[test]
fn claude_message_sent_during_a_model_call_is_queued_and_replayed() {
    let model = FakeModel::directed();
    let sb = Sandbox::new();
    let Some(mut s) = claude_session(&sb, &model, &["--replay-user-messages"]) else {
        return;
    };
    let (u1, u2) = (
        "6f1c1b0e-0000-4000-8000-000000000001",
        "6f1c1b0e-0000-4000-8000-000000000002",
    );
    s.send(&user_line("first zqq1 [[hang:3]]", Some(u1)));
    assert!(
        model
            .wait_for_request(WAIT, |r| r.count("zqq1") > 0)
            .is_some(),
        "the first turn's model call never came"
    );
    s.send(&user_line("second zqq2 [[text:reply to SECOND]]", Some(u2)));
    let first = claude_wait(&mut s, |v| v["type"] == "result");
    assert_eq!(first["result"], "reply to: first zqq1", "{first}");
    let replay = claude_wait(&mut s, |v| v["type"] == "user" && v["isReplay"] == true);
    assert_eq!(replay["uuid"], u2, "{replay}");
    let second = claude_wait(&mut s, |v| v["type"] == "result");
    assert_eq!(second["result"], "reply to SECOND", "{second}");
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 2, "{}", dump(&model));
    assert_eq!(reqs[0].count("zqq2"), 0);
    let tail = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(tail.contains("zqq2") && !tail.contains("zqq1"), "{tail}");
    s.close_stdin();
    assert_eq!(s.wait_exit(WAIT), Some(0));
    save(&model, "claude-queued", &s);
}

/// A user line sent while the turn's Bash runs is merged into that turn: Claude appends it to
/// the next request as a `system` message, the fake acknowledges it (`| queued user message
/// seen: …`) after the `[[ontool]]` answer, and the turn ends with one `result`; the next line
/// gets the next result, so the merged one got none.
#[test]
fn claude_message_sent_during_a_tool_is_merged_into_the_turn() {
    let model = FakeModel::directed();
    let sb = Sandbox::new();
    let Some(mut s) = claude_session(&sb, &model, &[]) else {
        return;
    };
    s.send(&user_line(
        "first zqm1 [[bash:sleep 3]] [[ontool:text=after the tool]]",
        None,
    ));
    // Claude runs `sleep` without asking; the assistant line with the call comes as it starts.
    claude_wait(&mut s, |v| {
        v["type"] == "assistant" && v["message"]["content"][0]["type"] == "tool_use"
    });
    s.send(&user_line("second zqm2 [[text:reply to SECOND]]", None));
    let result = claude_wait(&mut s, |v| v["type"] == "result");
    assert_eq!(
        result["result"],
        "after the tool | queued user message seen: reply to SECOND",
        "{}",
        dump(&model)
    );
    s.send(&user_line("third zqm3 [[text:reply to THIRD]]", None));
    let next = claude_wait(&mut s, |v| v["type"] == "result");
    assert_eq!(next["result"], "reply to THIRD", "{next}");
    let reqs = model.model_requests();
    let merged = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(merged["role"], "system", "{merged}");
    assert!(merged.to_string().contains("zqm2"), "{merged}");
    s.close_stdin();
    assert_eq!(s.wait_exit(WAIT), Some(0));
    save(&model, "claude-merged", &s);
}

fn save(model: &FakeModel, name: &str, s: &Session) {
    let dir = std::path::Path::new("/tmp/h-fake-logs").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (i, r) in model.model_requests().iter().enumerate() {
        std::fs::write(dir.join(format!("req{i}.json")), format!("{:#}", r.body)).unwrap();
        std::fs::write(dir.join(format!("dec{i}.txt")), format!("{:?}", r.decision)).unwrap();
    }
    std::fs::write(dir.join("stdout.jsonl"), s.transcript.join("\n")).unwrap();
}
