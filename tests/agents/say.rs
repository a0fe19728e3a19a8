//! oneshot's own drivers saying a message to a running Claude Code, Codex `app-server` and
//! Gemini `--acp`,
//! against the pinned CLIs and the fake model server: the driver's lines go to the CLI as they
//! are, the CLI's lines come back through the driver, and the message must reach the model in
//! the same conversation (../shared/agents/turns.md §3, §4).

use super::harness::Sandbox;
use super::stdio::Session;
use super::{claude, codex, gemini};
use crate::fake_model::{FakeModel, Reply};
use oneshot::agent::{AgentEvent, Delivery, Driver, DriverSetup, Protocol, Say, Turns};
use oneshot::process::Role;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(45);

/// A CLI and oneshot's driver for its protocol, wired together; every permission is allowed.
struct Driven {
    s: Session,
    d: Box<dyn Driver>,
    /// Every event the driver made so far.
    events: Vec<AgentEvent>,
    /// How many of them [`Driven::until`] has looked at.
    seen: usize,
}

impl Driven {
    fn open(
        s: Session,
        protocol: Protocol,
        sb: &Sandbox,
        model: Option<&str>,
        prompt: &str,
    ) -> Driven {
        let setup = DriverSetup {
            role: Role::Worker,
            cwd: sb.work(),
            model: model.map(str::to_string),
            resume: None,
        };
        let mut d = Driven {
            s,
            d: protocol.driver(setup),
            events: Vec::new(),
            seen: 0,
        };
        let mut out = Vec::new();
        d.d.open(prompt, &mut out);
        d.write(out);
        d
    }

    fn write(&mut self, lines: Vec<Vec<u8>>) {
        for line in lines {
            self.s.send_line(&line);
        }
    }

    /// Feeds the CLI's lines to the driver until an event `want` takes, from the first event
    /// not yet looked at; returns its index.
    fn until(&mut self, want: impl Fn(&AgentEvent) -> bool) -> usize {
        loop {
            if let Some(at) = self.events[self.seen..].iter().position(&want) {
                self.seen += at + 1;
                return self.seen - 1;
            }
            self.seen = self.events.len();
            self.s.wait_for(WAIT, |_| true);
            let line = self.s.transcript.last().expect("a line").clone();
            let (mut events, mut out) = (Vec::new(), Vec::new());
            self.d.feed(line.as_bytes(), &mut events, &mut out);
            self.write(out);
            for e in &events {
                if let AgentEvent::PermissionRequest {
                    request_id, input, ..
                } = e
                {
                    let answer = self.d.permit(request_id, true, None, input);
                    self.write(answer.into_iter().collect());
                }
            }
            self.events.extend(events);
        }
    }

    fn say(&mut self, id: &str, text: &str, now: bool) -> Delivery {
        let mut out = Vec::new();
        let said = Say {
            id: id.into(),
            text: text.into(),
            now,
        };
        let delivery = self.d.say(&said, &mut out);
        self.write(out);
        delivery
    }
}

fn taken(id: &'static str) -> impl Fn(&AgentEvent) -> bool {
    move |e| matches!(e, AgentEvent::MessageTaken { message_id } if message_id == id)
}

fn is_final(e: &AgentEvent) -> bool {
    matches!(e, AgentEvent::Final { .. })
}

fn final_text(e: &AgentEvent) -> Option<&str> {
    match e {
        AgentEvent::Final { text, .. } => text.as_deref(),
        _ => None,
    }
}

/// Codex: a message said while the turn runs a command steers it (the model reads it after the
/// command's output, in the same turn); one said while idle starts the next turn.
#[test]
fn codex_takes_a_message_by_steer_and_one_when_idle_by_a_new_turn() {
    let model = FakeModel::with([
        Reply::Bash("sleep 3".into()),
        Reply::Text("reply to STEER".into()),
        Reply::Text("reply to IDLE".into()),
    ]);
    let sb = Sandbox::new();
    let Some(mut c) = codex::codex(&sb, &model) else {
        return;
    };
    c.arg("app-server");
    let mut d = Driven::open(
        Session::spawn(c),
        Protocol::CodexAppServer,
        &sb,
        Some("gpt-5.5"),
        "run it",
    );
    d.until(|e| matches!(e, AgentEvent::ToolCall { .. }));
    assert_eq!(d.say("m-1", "steer zs1", false), Delivery::Sent);
    let at = d.until(taken("m-1"));
    let end = d.until(is_final);
    assert_eq!(final_text(&d.events[end]), Some("reply to STEER"));
    let finals = d.events.iter().filter(|e| is_final(e)).count();
    assert_eq!(finals, 1, "the steer joined the running turn");
    assert!(at < end);
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].body_text().contains("steer zs1"),
        "in the same turn"
    );

    assert_eq!(d.say("m-2", "idle zs2", false), Delivery::Sent);
    let started = d.until(|e| matches!(e, AgentEvent::TurnStarted));
    let at = d.until(taken("m-2"));
    assert!(started < at, "its turn starts before it is taken in");
    let end = d.until(is_final);
    assert_eq!(final_text(&d.events[end]), Some("reply to IDLE"));
    let reqs = model.model_requests();
    assert!(reqs[2].body_text().contains("steer zs1"), "one thread");
    assert!(reqs[2].body_text().contains("idle zs2"));
}

fn gemini_driven(sb: &Sandbox, model: &FakeModel, prompt: &str) -> Option<Driven> {
    let mut c = gemini::command(sb, model)?;
    c.args(["-m", gemini::MODEL, "--acp"]);
    Some(Driven::open(
        Session::spawn(c),
        Protocol::Acp,
        sb,
        None,
        prompt,
    ))
}

/// Gemini: a message said while the prompt runs a command is held, and sent as the next prompt
/// when the running one returns — the running turn is not cancelled.
#[test]
fn gemini_holds_a_message_until_the_running_prompt_returns() {
    let model = FakeModel::with([
        Reply::Bash("sleep 2".into()),
        Reply::Text("first done".into()),
        Reply::Text("reply to SECOND".into()),
    ]);
    let sb = Sandbox::new();
    let Some(mut d) = gemini_driven(&sb, &model, "run it") else {
        return;
    };
    d.until(|e| matches!(e, AgentEvent::PermissionRequest { .. }));
    assert_eq!(d.say("m-1", "second zg1", false), Delivery::Held);
    let first = d.until(is_final);
    assert_eq!(final_text(&d.events[first]), Some("first done"));
    d.until(taken("m-1"));
    let second = d.until(is_final);
    assert_eq!(final_text(&d.events[second]), Some("reply to SECOND"));
    let reqs = model.model_requests();
    let last = reqs.last().unwrap().body_text();
    assert!(last.contains("second zg1"), "{last}");
    assert!(
        last.contains("first done"),
        "the first turn stayed in the history"
    );
}

/// Gemini, `now`: the running prompt is cancelled and the message goes at once with an account
/// of the cancelled turn; that turn ends interrupted, not failed.
#[test]
fn gemini_now_cancels_the_running_prompt_and_re_prompts() {
    let model = FakeModel::with([
        Reply::Bash("sleep 20".into()),
        Reply::Text("reply to NOW".into()),
    ]);
    let sb = Sandbox::new();
    let Some(mut d) = gemini_driven(&sb, &model, "run it zg0") else {
        return;
    };
    d.until(|e| matches!(e, AgentEvent::PermissionRequest { .. }));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(d.say("m-2", "instead zg2", true), Delivery::Sent);
    let info = d.until(|e| matches!(e, AgentEvent::TurnInfo { .. }));
    assert_eq!(
        d.events[info],
        AgentEvent::TurnInfo {
            autonomous: false,
            interrupted: true
        }
    );
    assert!(matches!(
        d.events[info + 1],
        AgentEvent::Final { success: true, .. }
    ));
    d.until(taken("m-2"));
    let end = d.until(is_final);
    assert_eq!(final_text(&d.events[end]), Some("reply to NOW"));
    let last = model.model_requests().last().unwrap().body_text();
    assert!(last.contains("instead zg2"), "{last}");
    assert!(
        last.contains("run it zg0"),
        "the account names the cancelled ask"
    );
    assert!(
        !d.events
            .iter()
            .any(|e| matches!(e, AgentEvent::Error { .. })),
        "{:?}",
        d.events
    );
}

/// Claude, `now`: message A began a turn (the model hangs), B preempts it before any output.
/// Claude never replays A — yet the next request carries it — so the driver takes A in when the
/// turn is cut; B is replayed; every turn ends, and nothing keeps the input open.
#[test]
fn claude_now_preempts_a_turn_and_the_message_it_cut_is_still_taken_in() {
    let model = FakeModel::with([
        Reply::Text("first".into()),
        Reply::Hang,
        Reply::Text("reply to SECOND".into()),
    ]);
    let sb = Sandbox::new();
    let Some(mut c) = claude::claude(&sb, &model) else {
        return;
    };
    c.args([
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-prompt-tool",
        "stdio",
        "--replay-user-messages",
    ]);
    let mut d = Driven::open(Session::spawn(c), Protocol::Claude, &sb, None, "prompt zp0");
    let mut turns = Turns::new();
    turns.prompted();
    d.until(is_final);
    assert_eq!(d.say("m-a", "said za1", false), Delivery::Sent);
    turns.message_sent("m-a");
    assert!(
        model.wait_for_model_requests(2, WAIT),
        "A's turn asks the model"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(d.say("m-b", "now zb1", true), Delivery::Sent);
    turns.message_sent("m-b");
    let cut = d.until(is_final);
    assert!(
        matches!(d.events[cut], AgentEvent::Final { success: true, .. }),
        "cut short, not failed"
    );
    let end = d.until(is_final);
    for id in ["m-a", "m-b"] {
        let n = d.events.iter().filter(|e| taken(id)(e)).count();
        assert_eq!(n, 1, "{id} taken in once: {:?}", d.events);
    }
    assert_eq!(final_text(&d.events[end]), Some("reply to SECOND"));
    for e in &d.events {
        turns.apply(e);
    }
    assert!(
        !turns.keep_open(),
        "{:?}",
        turns.unanswered().collect::<Vec<_>>()
    );
    assert_eq!(turns.counts().0, 3);
    assert!(
        !d.events
            .iter()
            .any(|e| matches!(e, AgentEvent::Error { .. })),
        "{:?}",
        d.events
    );
    let last = model.model_requests().last().unwrap().body_text();
    assert!(
        last.contains("said za1") && last.contains("now zb1"),
        "{last}"
    );
}
