//! Seed 004's end-to-end gates, through the oneshot binary with the pinned CLIs against the
//! directed fake model server (its answers follow the `[[…]]` directives in the request; see
//! tests/fake_model/directive.rs):
//! 1. "do-it-again + immediate hello after an autonomous wake, under churn": many cycles of a
//!    background task that wakes Claude while a human message arrives; in every cycle the
//!    session reports the autonomous turn within the timeout and both turns complete;
//! 2. "transcript/timeline parity": after the race, every assistant message in Claude's
//!    transcript is in oneshot's timeline, in order;
//!
//! and an interrupt during an autonomous turn settles the session; `oneshot say` reaches a
//! running Codex (steer) and Gemini (held until its prompt returns) worker.

use super::harness::{Run, Sandbox, run};
use super::with_oneshot::{
    LIMIT, codex_overrides, log_records, oneshot, role_args, session_dir, state, worker_timeline,
};
use crate::fake_model::FakeModel;
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a cycle may take to show its autonomous turn.
const CYCLE: Duration = Duration::from_secs(30);

/// Cycles of gate 1 (the seed asks for 10 or more).
const CYCLES: usize = 10;

fn spawn(c: Command) -> std::thread::JoinHandle<Run> {
    std::thread::spawn(move || run(c, LIMIT * 2))
}

/// Waits until the session's log satisfies `want`; false on timeout.
fn wait_log(sb: &Sandbox, timeout: Duration, want: impl Fn(&[Value]) -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        // The session's directory is made before its state file and its log: until both are
        // there, nothing has happened yet.
        let records = std::fs::read_dir(sb.tmp.path().join("state/sessions"))
            .ok()
            .and_then(|mut d| d.find_map(Result::ok))
            .filter(|e| {
                e.path().join("oneshot.json").is_file()
                    && e.path().join("oneshot-log.json").is_file()
            })
            .map(|_| log_records(sb))
            .unwrap_or_default();
        if want(&records) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn count(records: &[Value], event: &str, owner: &str) -> usize {
    records
        .iter()
        .filter(|r| r["type"] == "turn" && r["event"] == event && r["owner"] == owner)
        .count()
}

fn id(sb: &Sandbox) -> String {
    session_dir(sb)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// `oneshot say` to the one session, returning at once.
fn say(sb: &Sandbox, text: &str, more: &[&str]) {
    let out = oneshot(sb, &[])
        .env("ONESHOT_ACTOR", "ann")
        .args(["say", &id(sb), text, "--wait", "0s"])
        .args(more)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

fn claude_session(sb: &Sandbox, model: &FakeModel, task: &str) -> Option<Command> {
    let claude = super::claude::claude(sb, model)?;
    let mut c = oneshot(sb, &[&claude]);
    c.args(["--worker", "claude", "--auditor-cmd", "echo VERDICT: done"])
        .arg(task);
    Some(c)
}

#[test]
fn gate_autonomous_wake_and_hello_under_churn_then_transcript_parity() {
    let sb = Sandbox::new();
    let model = FakeModel::directed();
    let Some(c) = claude_session(
        &sb,
        &model,
        "cycle 0 [[onnotify:hang=1;text=woke 0]] [[bgbash:sleep 0.6; echo BG0]]",
    ) else {
        return;
    };
    let handle = spawn(c);
    for cycle in 1..=CYCLES {
        // The background task of the cycle before wakes the agent: its own turn, reported.
        let woke = wait_log(&sb, CYCLE, |r| count(r, "began", "autonomous") >= cycle);
        assert!(woke, "cycle {cycle}: no autonomous turn within {CYCLE:?}");
        // Hello, right as the agent's own turn starts (its model call takes a second); it
        // starts the next cycle's task (the last one starts none, and the run ends).
        let hello = if cycle < CYCLES {
            format!(
                "hello {cycle} [[onnotify:hang=1;text=woke {cycle}]] \
                 [[bgbash:sleep 0.6; echo BG{cycle}]]"
            )
        } else {
            format!("hello {cycle} [[text:goodbye]]")
        };
        say(&sb, &hello, &[]);
        // Both turns complete: the agent's own, and the one that took the hello in.
        let done = wait_log(&sb, CYCLE, |r| {
            count(r, "ended", "autonomous") >= cycle
                && r.iter()
                    .filter(|m| m["type"] == "message" && m["status"] == "taken")
                    .count()
                    >= cycle
        });
        assert!(done, "cycle {cycle}: the turns did not both complete");
    }
    let r = handle.join().unwrap();
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let s = state(&sb);
    assert_eq!(s["state"], "COMPLETED");
    let messages = s["messages"].as_array().unwrap();
    assert_eq!(messages.len(), CYCLES);
    assert!(
        messages.iter().all(|m| m["status"] == "taken"),
        "{messages:#?}"
    );
    let records = log_records(&sb);
    assert_eq!(count(&records, "began", "autonomous"), CYCLES);
    assert_eq!(count(&records, "ended", "autonomous"), CYCLES);
    assert!(
        !records.iter().any(|r| r["type"] == "warning"
            && r["message"]
                .as_str()
                .unwrap_or("")
                .contains("transcript holds")),
        "the stream carried every message: nothing was reconciled"
    );

    // Gate 2: every assistant message of Claude's own transcript is in oneshot's timeline, in
    // the transcript's order.
    let transcript = s["agents"]["worker_transcript"]
        .as_str()
        .expect("journaled");
    let said: Vec<String> = std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "assistant" && v["isSidechain"] != true)
        .filter_map(|v| v["message"]["id"].as_str().map(str::to_string))
        .fold(Vec::new(), |mut ids, id| {
            if ids.last() != Some(&id) {
                ids.push(id);
            }
            ids
        });
    assert!(said.len() > 2 * CYCLES, "{} messages", said.len());
    let timeline = worker_timeline(&sb, oneshot::agent::Protocol::Claude);
    let shown: Vec<&str> = timeline.messages().iter().map(|m| m.id.as_str()).collect();
    let mut at = 0;
    for id in &said {
        match shown[at..].iter().position(|s| s == id) {
            Some(k) => at += k + 1,
            None => {
                panic!("{id} is in the transcript but not in the timeline (in order): {shown:?}")
            }
        }
    }
}

#[test]
fn an_interrupt_during_an_autonomous_turn_settles_the_session() {
    let sb = Sandbox::new();
    let model = FakeModel::directed();
    let Some(c) = claude_session(
        &sb,
        &model,
        "start [[onnotify:hang=4;text=late]] [[bgbash:sleep 0.5; echo BG]]",
    ) else {
        return;
    };
    let handle = spawn(c);
    let woke = wait_log(&sb, CYCLE, |r| count(r, "began", "autonomous") >= 1);
    assert!(woke, "no autonomous turn");
    let out = oneshot(&sb, &[])
        .args(["stop", &id(&sb), "--wait", "30s"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let r = handle.join().unwrap();
    assert_eq!(r.code(), Some(130), "paused: {}", r.dump());
    let s = state(&sb);
    assert_eq!(s["state"], "INTERRUPTED");
    let records = log_records(&sb);
    assert!(
        records.iter().any(|r| r["type"] == "turn"
            && r["event"] == "ended"
            && r["owner"] == "autonomous"
            && r["interrupted"] == true),
        "the autonomous turn ended, interrupted: {:#?}",
        records
            .iter()
            .filter(|r| r["type"] == "turn")
            .collect::<Vec<_>>()
    );
    assert!(
        r.elapsed < Duration::from_secs(30),
        "settled, not waited out: {:?}",
        r.elapsed
    );
}

#[test]
fn say_steers_a_running_codex_worker() {
    let sb = Sandbox::new();
    let model = FakeModel::directed();
    let Some(codex) = super::codex::codex(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&codex]);
    c.args(["--worker", "codex:gpt-5.5"])
        .args(role_args("worker", &codex_overrides(&codex)))
        .args(["--auditor-cmd", "echo VERDICT: done"])
        .arg("take a while [[bash:sleep 4; echo slept]]");
    let handle = spawn(c);
    assert!(model.wait_for_model_requests(1, CYCLE));
    say(&sb, "steer [[text:reply to STEER zq71]]", &[]);
    let r = handle.join().unwrap();
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let last = model.model_requests().last().unwrap().body_text();
    assert!(last.contains("reply to STEER zq71"), "{last}");
    assert_eq!(state(&sb)["messages"][0]["status"], "taken");
    let show = oneshot(&sb, &[]).args(["show"]).output().unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("reply to STEER zq71"), "{show}");
}

#[test]
fn say_to_a_running_gemini_worker_waits_for_its_prompt_to_return() {
    let sb = Sandbox::new();
    let model = FakeModel::directed();
    let Some(gemini) = super::gemini::command(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&gemini]);
    c.args(["--worker", &format!("gemini:{}", super::gemini::MODEL)])
        .args(["--auditor-cmd", "echo VERDICT: done"])
        .arg("think first [[hang:3]] [[text:thought]]");
    let handle = spawn(c);
    assert!(model.wait_for_model_requests(1, CYCLE));
    say(&sb, "and then [[text:reply to HELD zq72]]", &[]);
    let r = handle.join().unwrap();
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let requests = model.model_requests();
    let last = requests.last().unwrap().body_text();
    assert!(last.contains("reply to HELD zq72"), "{last}");
    let statuses: Vec<String> = log_records(&sb)
        .iter()
        .filter(|r| r["type"] == "message")
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["received", "held", "taken"]);
    // The running prompt was not cancelled: its answer is in the account too.
    let show = oneshot(&sb, &[]).args(["show"]).output().unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("thought"), "{show}");
}

#[test]
fn now_during_an_autonomous_turn_interrupts_it_then_runs_the_message() {
    let sb = Sandbox::new();
    let model = FakeModel::directed();
    let Some(c) = claude_session(
        &sb,
        &model,
        "start [[onnotify:hang=4;text=too late]] [[bgbash:sleep 0.5; echo BG]]",
    ) else {
        return;
    };
    let handle = spawn(c);
    let woke = wait_log(&sb, CYCLE, |r| count(r, "began", "autonomous") >= 1);
    assert!(woke, "no autonomous turn");
    say(&sb, "switch now [[text:switched zq73]]", &["--now"]);
    let r = handle.join().unwrap();
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let records = log_records(&sb);
    let turns: Vec<(String, String, bool)> = records
        .iter()
        .filter(|r| r["type"] == "turn")
        .map(|r| {
            (
                r["event"].as_str().unwrap().to_string(),
                r["owner"].as_str().unwrap().to_string(),
                r["interrupted"] == true,
            )
        })
        .collect();
    // The agent's own turn is torn down first; the message's turn runs after it.
    let cut = turns
        .iter()
        .position(|t| *t == ("ended".into(), "autonomous".into(), true))
        .unwrap_or_else(|| panic!("{turns:?}"));
    assert!(
        turns[cut + 1..].contains(&("began".into(), "foreground".into(), false)),
        "{turns:?}"
    );
    assert_eq!(state(&sb)["messages"][0]["status"], "taken");
    let last = model.model_requests().last().unwrap().body_text();
    assert!(last.contains("switch now"), "{last}");
    let show = oneshot(&sb, &[]).args(["show"]).output().unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("switched zq73"), "{show}");
    assert!(
        !show.contains("[worker] too late"),
        "the interrupted turn never answered: {show}"
    );
}
