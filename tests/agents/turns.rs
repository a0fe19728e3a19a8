//! Turns that do not follow the one-prompt-one-answer pattern, driven against the real CLIs
//! (no oneshot involved) with the fake model server in its directed mode, where each answer
//! comes from the turn directives in the request itself (turns.md in the design notes):
//! Claude's autonomous turn after a background task, user messages queued behind a running
//! Claude turn or merged into it (and a notification merged likewise), Codex's `turn/steer` into
//! a running turn, and Gemini's second ACP prompt, which cancels the first.

use super::claude::claude;
use super::harness::Sandbox;
use super::stdio::Session;
use super::{codex, gemini};
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

/// A Claude `system` line of this subtype (`task_started`, `task_updated`, `init`, …).
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
    // The task waits for a file the test makes once the first turn is over, so it cannot end
    // (and be merged into that turn) before.
    s.send(&user_line(
        "start it zqb1 [[bgbash:until [ -e go1 ]; do sleep 0.1; done; echo BG > bg.txt]]",
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
    std::fs::write(sb.work().join("go1"), "").unwrap();

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
        "again [[onnotify:hang=0.5;text=woke up zqb2]] \
         [[bgbash:until [ -e go2 ]; do sleep 0.1; done]]",
        None,
    ));
    claude_wait(&mut s, |v| {
        v["type"] == "result" && v.get("origin").is_none()
    });
    std::fs::write(sb.work().join("go2"), "").unwrap();
    let woke = claude_wait(&mut s, |v| v["type"] == "result");
    assert_eq!(woke["origin"]["kind"], "task-notification", "{woke}");
    assert_eq!(woke["result"], "woke up zqb2", "{}", dump(&model));
    let d = model.decisions();
    assert_eq!(d.len(), 6, "{d:#?}");
    assert_eq!(
        d[0],
        "bgbash: until [ -e go1 ]; do sleep 0.1; done; echo BG > bg.txt"
    );
    assert!(
        d[1].starts_with("Tool finished. ") && d[2].starts_with("Notified: "),
        "{d:#?}"
    );
    assert_eq!(d[5], "hang 0.50s; woke up zqb2");
    s.close_stdin();
    assert_eq!(s.wait_exit(WAIT), Some(0));
}

/// With `--replay-user-messages`, a user line (with a `uuid`) sent while the model call of a
/// turn hangs is queued: that turn ends with its own answer, the message comes back as an
/// `isReplay` user line with our uuid, and it runs as a turn of its own whose request ends with
/// it alone. Two lines queued behind a hanging turn run as one turn: Claude joins them into one
/// text block (a newline between), replays both uuids, and ends with one `result`.
#[test]
fn claude_message_sent_during_a_model_call_is_queued_and_replayed() {
    let model = FakeModel::directed();
    let sb = Sandbox::new();
    let Some(mut s) = claude_session(&sb, &model, &["--replay-user-messages"]) else {
        return;
    };
    let uuid = |n: u32| format!("6f1c1b0e-0000-4000-8000-00000000000{n}");
    // Sends `hanging`, waits for its model call, sends `queued` behind it; its answer.
    let hang_then = |s: &mut Session, hanging: &str, tag: &str, queued: &[(&str, u32)]| {
        s.send(&user_line(hanging, None));
        assert!(
            model.wait_for_request(WAIT, |r| r.count(tag) > 0).is_some(),
            "the model call of {hanging:?} never came"
        );
        for (text, n) in queued {
            s.send(&user_line(text, Some(&uuid(*n))));
        }
        claude_wait(s, |v| v["type"] == "result")
    };

    let first = hang_then(
        &mut s,
        "first zqq1 [[hang:3]]",
        "zqq1",
        &[("second zqq2 [[text:reply to SECOND]]", 2)],
    );
    assert_eq!(first["result"], "reply to: first zqq1", "{first}");
    // Replayed once consumed: after the first result, before the second.
    let replay = claude_wait(&mut s, |v| v["isReplay"] == true && v["uuid"] == uuid(2));
    assert_eq!(replay["type"], "user", "{replay}");
    assert!(replay.to_string().contains("zqq2"), "{replay}");
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

    let third = hang_then(
        &mut s,
        "third zqq3 [[hang:2]]",
        "zqq3",
        &[
            ("fourth zqq4 [[text:reply to FOURTH]]", 4),
            ("fifth zqq5 [[text:reply to FIFTH]]", 5),
        ],
    );
    assert_eq!(third["result"], "reply to: third zqq3", "{third}");
    let both = claude_wait(&mut s, |v| v["type"] == "result");
    assert_eq!(both["result"], "reply to FOURTH reply to FIFTH", "{both}");
    let replayed: Vec<String> = s
        .transcript
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["isReplay"] == true)
        .filter_map(|v| v["uuid"].as_str().map(str::to_string))
        .collect();
    for n in [4, 5] {
        assert!(replayed.contains(&uuid(n)), "{replayed:?}");
    }
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 4, "{}", dump(&model));
    let tail = &reqs[3].body["messages"].as_array().unwrap().last().unwrap()["content"];
    let texts: Vec<&str> = tail
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .filter(|t| !t.starts_with("<system-reminder>"))
        .collect();
    assert_eq!(
        texts,
        ["fourth zqq4 [[text:reply to FOURTH]]\nfifth zqq5 [[text:reply to FIFTH]]"],
        "{tail}"
    );
    s.close_stdin();
    assert_eq!(s.wait_exit(WAIT), Some(0));
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
}

/// A background task that ends while another turn's Bash runs is merged into that turn: Claude
/// reports `task_updated` but no `task_notification` line, appends the notification to the
/// next request as a `system` message (acknowledged by the fake: `| queued user message seen:
/// Notified: …`), and no autonomous turn follows; the next line gets the next result.
#[test]
fn claude_notification_during_a_tool_is_merged_into_the_turn() {
    let model = FakeModel::directed();
    let sb = Sandbox::new();
    let Some(mut s) = claude_session(&sb, &model, &[]) else {
        return;
    };
    s.send(&user_line(
        "start zqn1 [[bgbash:until [ -e go ]; do sleep 0.1; done]]",
        None,
    ));
    let started = claude_wait(&mut s, is_system("task_started"));
    let task = started["task_id"].as_str().unwrap().to_string();
    claude_wait(&mut s, |v| v["type"] == "result");
    // The foreground command lets the task end, then runs on while Claude notices.
    s.send(&user_line("hello zqn2 [[bash:touch go; sleep 3]]", None));
    let result = claude_wait(&mut s, |v| v["type"] == "result");
    let text = result["result"].as_str().unwrap_or_default();
    assert!(result.get("origin").is_none(), "{result}");
    assert!(
        text.starts_with("Tool finished. ")
            && text.contains(" | queued user message seen: Notified: <task-notification>"),
        "{text}\n{}",
        dump(&model)
    );
    s.send(&user_line("third zqn3 [[text:reply to THIRD]]", None));
    let next = claude_wait(&mut s, |v| v["type"] == "result");
    assert_eq!(next["result"], "reply to THIRD", "{next}");
    let lines: Vec<Value> = s
        .transcript
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let of_task = |subtype: &str| {
        lines
            .iter()
            .filter(|v| v["subtype"] == subtype && v["task_id"] == task.as_str())
            .count()
    };
    assert_eq!(of_task("task_updated"), 1, "{}", s.transcript.join("\n"));
    assert_eq!(
        of_task("task_notification"),
        0,
        "{}",
        s.transcript.join("\n")
    );
    let reqs = model.model_requests();
    let merged = reqs[3].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(merged["role"], "system", "{merged}");
    assert!(merged.to_string().contains(&task), "{merged}");
    s.close_stdin();
    assert_eq!(s.wait_exit(WAIT), Some(0));
}

/// A JSON-RPC request line (Codex's app-server takes `"jsonrpc"` too; ACP requires it).
fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn is_response(id: u64) -> impl Fn(&Value) -> bool {
    move |v: &Value| v["id"] == id && (v.get("result").is_some() || v.get("error").is_some())
}

/// Codex app-server: `turn/steer` while the turn's command runs joins the running turn (the
/// answer names the same turn id); the command runs to its end, the next model request carries
/// the command's output and then the steer text as the last user message, and the turn
/// completes once, with the steer's answer. The next `turn/start` is a new turn.
#[test]
fn codex_steer_joins_the_running_turn() {
    let model = FakeModel::directed();
    let sb = Sandbox::new();
    let Some(mut c) = codex::codex(&sb, &model) else {
        return;
    };
    c.arg("app-server");
    let mut s = Session::spawn(c);
    s.send(&rpc(
        1,
        "initialize",
        json!({"clientInfo": {"name": "oneshot-tests", "version": "0"}}),
    ));
    s.wait_for(WAIT, is_response(1));
    s.send(&json!({"jsonrpc": "2.0", "method": "initialized"}));
    let cwd = sb.work().display().to_string();
    s.send(&rpc(
        2,
        "thread/start",
        json!({"cwd": cwd, "model": "gpt-5.5", "sandbox": "workspace-write",
               "approvalPolicy": "never"}),
    ));
    let thread = s.wait_for(WAIT, is_response(2));
    let thread_id = thread["result"]["thread"]["id"].clone();
    assert!(thread_id.is_string(), "{thread}");
    let turn_start = |id: u64, text: &str| {
        rpc(
            id,
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
        )
    };
    s.send(&turn_start(
        3,
        "first zqc1 [[bash:sleep 3; echo SLEPT > slept.txt]]",
    ));
    let started = s.wait_for(WAIT, is_response(3));
    let turn_id = started["result"]["turn"]["id"].clone();
    assert!(turn_id.is_string(), "{started}");
    s.wait_for(WAIT, |v| {
        v["method"] == "item/started" && v["params"]["item"]["type"] == "commandExecution"
    });
    s.send(&rpc(
        4,
        "turn/steer",
        json!({"threadId": thread_id, "expectedTurnId": turn_id,
               "input": [{"type": "text", "text": "steer zqc2 [[text:reply to STEER]]"}]}),
    ));
    let steered = s.wait_for(WAIT, is_response(4));
    assert_eq!(steered["result"]["turnId"], turn_id, "{steered}");
    let done = s.wait_for(WAIT, |v| v["method"] == "turn/completed");
    assert_eq!(done["params"]["turn"]["id"], turn_id, "{done}");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("slept.txt")).unwrap(),
        "SLEPT\n",
        "the command ran to its end"
    );
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 2, "{}", dump(&model));
    let last = reqs[1].body["input"].as_array().unwrap();
    let n = last.len();
    assert_eq!(
        last[n - 2]["type"],
        "function_call_output",
        "{}",
        dump(&model)
    );
    assert!(last[n - 1].to_string().contains("zqc2"), "{}", dump(&model));
    assert_eq!(reqs[1].decision.as_deref(), Some("reply to STEER"));

    assert_eq!(
        done["params"]["turn"]["items"][0]["text"], "reply to STEER",
        "{done}"
    );

    // The steer made no turn of its own: the next turn/start is a new turn, completed next.
    // Its command's output is the last input of its second request, answered by default.
    s.send(&turn_start(5, "third zqc3 [[bash:echo CODEX-OUT]]"));
    let next = s.wait_for(WAIT, is_response(5));
    assert_ne!(next["result"]["turn"]["id"], turn_id, "{next}");
    let done = s.wait_for(WAIT, |v| v["method"] == "turn/completed");
    assert_eq!(done["params"]["turn"]["id"], next["result"]["turn"]["id"]);
    let said = done["params"]["turn"]["items"].to_string();
    assert!(
        said.contains("Tool finished. ") && said.contains("CODEX-OUT"),
        "{said}"
    );
    let completed = s
        .transcript
        .iter()
        .filter(|l| l.contains(r#""method":"turn/completed""#))
        .count();
    assert_eq!(completed, 2, "{}", s.transcript.join("\n"));
}

/// Gemini `--acp`: a second `session/prompt` while the first one's model call hangs cancels the
/// first (answered `stopReason: cancelled`), runs on its own, and the model never hears of the
/// cancelled prompt.
#[test]
fn gemini_second_prompt_cancels_the_first() {
    let model = FakeModel::directed();
    let sb = Sandbox::new();
    let Some(mut c) = gemini::command(&sb, &model) else {
        return;
    };
    c.args(["-m", gemini::MODEL, "--acp"]);
    let mut s = Session::spawn(c);
    s.send(&rpc(
        1,
        "initialize",
        json!({"protocolVersion": 1,
               "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}}}),
    ));
    s.wait_for(WAIT, is_response(1));
    let cwd = sb.work().display().to_string();
    s.send(&rpc(
        2,
        "session/new",
        json!({"cwd": cwd, "mcpServers": []}),
    ));
    let session = s.wait_for(WAIT, is_response(2));
    let sid = session["result"]["sessionId"].clone();
    assert!(sid.is_string(), "{session}");
    let prompt = |id: u64, text: &str| {
        rpc(
            id,
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        )
    };
    // Long enough that only the second prompt can end it.
    s.send(&prompt(3, "first zqg1 [[hang:20]]"));
    assert!(
        model
            .wait_for_request(WAIT, |r| r.count("zqg1") > 0)
            .is_some(),
        "the first prompt's model call never came"
    );
    s.send(&prompt(4, "second zqg2 [[text:reply to SECOND]]"));
    let first = s.wait_for(WAIT, is_response(3));
    assert_eq!(first["result"]["stopReason"], "cancelled", "{first}");
    let second = s.wait_for(WAIT, is_response(4));
    assert_eq!(second["result"]["stopReason"], "end_turn", "{second}");
    let said = s.transcript.join("\n");
    assert!(said.contains("reply to SECOND"), "{said}");
    let reqs = model.model_requests();
    let last = reqs.last().unwrap();
    assert_eq!(last.decision.as_deref(), Some("reply to SECOND"));
    assert_eq!(
        last.count("zqg1"),
        0,
        "the cancelled prompt left the history"
    );

    // A shell call (Gemini runs `echo` without asking; any question is allowed), then the
    // default answer to its functionResponse.
    s.send(&prompt(5, "third zqg3 [[bash:echo GEM-OUT]]"));
    loop {
        let v = s.wait_for(WAIT, |v| {
            is_response(5)(v) || v["method"] == "session/request_permission"
        });
        if v["id"] == 5 {
            break;
        }
        let allow = v["params"]["options"]
            .as_array()
            .and_then(|o| o.iter().find(|o| o["kind"] == "allow_once"))
            .unwrap_or_else(|| panic!("no allow_once option: {v}"));
        s.send(&json!({"jsonrpc": "2.0", "id": v["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}}));
    }
    let third = s
        .transcript
        .iter()
        .rev()
        .find(|l| l.contains(r#""id":5,"#))
        .unwrap();
    assert!(third.contains(r#""stopReason":"end_turn""#), "{third}");
    let d = model.decisions();
    let last = d.last().unwrap();
    assert!(
        last.starts_with("Tool finished. ") && last.contains("GEM-OUT"),
        "{d:#?}"
    );
}
