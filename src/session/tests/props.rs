//! Whatever happens — any order of events, any answers from the policy, crashes and restarts
//! in between — the core stays inside the seed's table, never acts before it journals, and
//! never reaches a state nobody designed.

use crate::machine::{SessionState, Verdict, edges};
use crate::policy::{FailMode, GuardOutcome, HookCtx, Limits, SalvageDecision, VerdictDecision};
use crate::process::{Evidence, ProcessIdentity, StopReason};
use crate::session::record::Record;
use crate::session::{
    Answer, Decide, Effect, Event, ExitStatus, HookError, Phase, PolicyRef, Reason, Session,
};
use proptest::prelude::*;
use std::borrow::Cow;
use std::collections::VecDeque;

/// A policy that answers whatever the test case says, including failures.
struct Chaos {
    answers: VecDeque<u8>,
    guard_mode: FailMode,
    observer_mode: FailMode,
    limits: Limits,
}

impl Chaos {
    fn next(&mut self) -> u8 {
        self.answers.pop_front().unwrap_or(0)
    }

    fn answer<T>(result: Result<T, HookError>) -> Answer<T> {
        Answer {
            result,
            builtin: false,
            duration_us: 1,
            logs: Vec::new(),
        }
    }

    /// A hook that failed, or (one time in three) that the user interrupted (Ctrl-C).
    fn fail(&mut self, hook: &str) -> HookError {
        let kind = if self.next().is_multiple_of(3) {
            "interrupted"
        } else {
            "runtime"
        };
        HookError {
            hook: hook.into(),
            kind: kind.into(),
            message: format!("chaos.lua:1: {hook} failed"),
        }
    }
}

impl Decide for Chaos {
    fn policy(&self) -> PolicyRef {
        PolicyRef {
            path: None,
            hash: "chaos".into(),
            generation: 1,
            budget: None,
        }
    }
    fn limits(&self) -> Limits {
        self.limits
    }
    fn fail_mode(&self, hook: &str) -> FailMode {
        match hook {
            "on_transition" => self.observer_mode,
            h if h.starts_with("guard") => self.guard_mode,
            _ => FailMode::Closed,
        }
    }
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        Cow::Borrowed(text)
    }
    fn verdict(&mut self, _: &str, _: &HookCtx) -> Answer<VerdictDecision> {
        let verdict = match self.next() % 5 {
            0 => Some(Verdict::Done),
            1 => Some(Verdict::Retry),
            2 => Some(Verdict::Impossible),
            // No verdict in the answer: the auditor is asked again.
            3 => None,
            _ => return Chaos::answer(Err(self.fail("verdict"))),
        };
        Chaos::answer(Ok(VerdictDecision {
            verdict,
            reason: Some("because".into()),
            confidence: None,
        }))
    }
    fn salvage(&mut self, _: &Evidence, _: &HookCtx) -> Answer<SalvageDecision> {
        use crate::machine::Salvage as S;
        let salvage = match self.next() % 4 {
            0 => S::Success,
            1 => S::Partial,
            2 => S::Nothing,
            _ => return Chaos::answer(Err(self.fail("salvage"))),
        };
        Chaos::answer(Ok(SalvageDecision {
            salvage,
            reason: None,
        }))
    }
    fn guard(&mut self, from: SessionState, to: SessionState, _: &HookCtx) -> Answer<GuardOutcome> {
        Chaos::answer(match self.next() % 8 {
            6 => Ok(GuardOutcome::Veto("no".into())),
            7 => Err(self.fail(&format!("guards[{from} -> {to}]"))),
            _ => Ok(GuardOutcome::Allow),
        })
    }
    fn next_prompt(&mut self, _: &HookCtx) -> Answer<String> {
        Chaos::answer(match self.next() % 8 {
            7 => Err(self.fail("next_prompt")),
            _ => Ok("again".into()),
        })
    }
    fn audit_prompt(&mut self, _: &HookCtx) -> Answer<String> {
        Chaos::answer(match self.next() % 8 {
            7 => Err(self.fail("audit_prompt")),
            _ => Ok("judge".into()),
        })
    }
    fn on_transition(&mut self, _: SessionState, _: SessionState, _: &HookCtx) -> Answer<()> {
        Chaos::answer(match self.next() % 8 {
            7 => Err(self.fail("on_transition")),
            _ => Ok(()),
        })
    }
    fn permit(
        &mut self,
        _: crate::process::Role,
        _: &str,
        _: &serde_json::Value,
        _: &HookCtx,
    ) -> Answer<crate::policy::PermitDecision> {
        Chaos::answer(match self.next() % 3 {
            0 => Ok(crate::policy::PermitDecision::allow()),
            1 => Ok(crate::policy::PermitDecision::deny("no")),
            _ => Err(self.fail("permit")),
        })
    }
}

/// An input: an event, the answer the core waits for (so runs get far, not only stray events),
/// or oneshot dying and a new one reading the state file back.
#[derive(Debug, Clone)]
enum Input {
    Event(Event),
    Respond { fail: bool, code: i32 },
    Restart,
}

fn any_input() -> impl Strategy<Value = Input> {
    let reason = proptest::sample::select(vec![
        None,
        Some(StopReason::ExitCode),
        Some(StopReason::InactivityTimeout),
        Some(StopReason::WorkerTimeout),
        Some(StopReason::Interrupted),
        Some(StopReason::OneshotDied),
    ]);
    prop_oneof![
        3 => Just(Input::Event(Event::Start)),
        4 => (1..1000i32).prop_map(|pid| Input::Event(Event::Spawned(ProcessIdentity { pid, pgid: pid, start_time: None }))),
        1 => Just(Input::Event(Event::SpawnFailed("ENOENT".into()))),
        4 => (proptest::option::of(0..3i32), proptest::option::of(9..16i32)).prop_map(|(code, signal)| {
            Input::Event(Event::Exited { exit: ExitStatus { code, signal }, tail: "out".into(), stdout: "out".into() })
        }),
        1 => proptest::sample::select(vec![StopReason::InactivityTimeout, StopReason::WorkerTimeout])
            .prop_map(|r| Input::Event(Event::TimedOut(r))),
        1 => Just(Input::Event(Event::Interrupt)),
        1 => Just(Input::Event(Event::Kill)),
        4 => (reason, proptest::collection::vec("[a-z]{1,3}", 0..2)).prop_map(|(reason, files)| {
            Input::Event(Event::Inspected(Evidence { reason, changed_files: files, ..Evidence::default() }))
        }),
        1 => Just(Input::Event(Event::Fenced("gone".into()))),
        1 => Just(Input::Event(Event::PolicyChanged)),
        1 => "[a-z]{1,4}".prop_map(|id| Input::Event(Event::AgentSession(crate::session::OwnSession::id(id)))),
        1 => (0u32..4).prop_map(|turns| Input::Event(Event::AgentProgress(crate::session::Spent { turns, tokens: 0, usd: 0.0 }))),
        1 => proptest::sample::select(vec![crate::agent::ErrorKind::Auth, crate::agent::ErrorKind::Server])
            .prop_map(|kind| Input::Event(Event::AgentFailed(crate::session::AgentFailure {
                agent: crate::agent::AgentKind::Claude, kind, status: None, message: "boom".into(),
            }))),
        1 => Just(Input::Event(Event::PermissionAsked {
            request_id: "r".into(), tool: "Bash".into(), input: serde_json::json!({"command": "ls"}),
        })),
        1 => Just(Input::Restart),
        12 => (any::<bool>(), 0..3i32).prop_map(|(fail, code)| Input::Respond { fail: fail && code == 2, code }),
    ]
}

/// The journal-before-act rule for one step: the state file as it stands when an act is
/// carried out names what is being done. The loop writes the session as it is after the step
/// at each [`Effect::Journal`], so an act after a journal of its own step is judged by the
/// session now, and an act without one by the image the last journaling step left.
fn check_journal_before_act(
    effects: &[Effect],
    s: &Session,
    image: &Session,
) -> Result<(), TestCaseError> {
    let mut journaled = false;
    for e in effects {
        match e {
            Effect::Journal => journaled = true,
            e if e.is_act() => {
                let s = if journaled { s } else { image };
                let run = s.phase.run();
                match e {
                    Effect::Spawn(spawn) => {
                        prop_assert_eq!(s.phase.role(), Some(spawn.role));
                        prop_assert!(run.is_some_and(|r| r.process.is_none()));
                    }
                    Effect::Stop { .. } | Effect::Kill => {
                        prop_assert!(
                            run.is_some_and(|r| r.stopping.is_some() && r.process.is_some())
                        );
                    }
                    Effect::Fence { process, .. } => {
                        prop_assert_eq!(run.and_then(|r| r.process), Some(*process));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Terminal for good: not a FAILED that a policy error left to be taken up again.
fn finished(s: &Session) -> bool {
    s.state().is_terminal() && s.phase.retake().is_none()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn no_sequence_of_events_or_answers_escapes_the_table(
        inputs in proptest::collection::vec(any_input(), 1..48),
        answers in proptest::collection::vec(any::<u8>(), 0..64),
        max in 1u32..4,
        open_guard in any::<bool>(),
        closed_observer in any::<bool>(),
    ) {
        let mut chaos = Chaos {
            answers: answers.into(),
            guard_mode: if open_guard { FailMode::Open } else { FailMode::Closed },
            observer_mode: if closed_observer { FailMode::Closed } else { FailMode::Open },
            limits: Limits { max_iterations: max, ..Limits::default() },
        };
        let policy = chaos.policy();
        let mut s = Session::new(
            crate::session::NewSession {
                id: "id".into(),
                task: "t".into(),
                workdir: "/w".into(),
                worker_cmd: "w".into(),
                auditor_cmd: "a".into(),
            },
            policy,
            max,
            0,
        );
        let allowed = edges();
        let mut now = 0;
        let mut ended = false;
        // What `oneshot.json` holds: the session as of the last journaling step.
        let mut image = serde_json::to_string(&s).unwrap();
        // What the core asked for last and waits to hear about.
        let mut pending: Option<Effect> = None;
        for input in inputs {
            now += 1;
            let event = match input {
                Input::Restart => {
                    // oneshot dies; the next one reads the state file back.
                    s = serde_json::from_str(&image).unwrap();
                    ended = finished(&s);
                    pending = None;
                    continue;
                }
                Input::Event(e) => e,
                Input::Respond { fail, code } => match pending.take() {
                    Some(Effect::Spawn(_)) if fail => Event::SpawnFailed("ENOENT".into()),
                    Some(Effect::Spawn(_)) => Event::Spawned(ProcessIdentity { pid: 7, pgid: 7, start_time: None }),
                    Some(Effect::Inspect { reason, exit }) => Event::Inspected(Evidence {
                        reason,
                        exit_code: exit.code,
                        changed_files: if code == 1 { vec!["f".into()] } else { Vec::new() },
                        ..Evidence::default()
                    }),
                    Some(Effect::Fence { .. }) => Event::Fenced("gone".into()),
                    _ if s.phase.run().is_some_and(|r| r.process.is_some() && r.exited.is_none()) => {
                        Event::Exited { exit: ExitStatus { code: Some(code), signal: None }, tail: "out".into(), stdout: "out".into() }
                    }
                    _ => Event::Start,
                },
            };
            let before = s.state();
            let effects = s.step(now, event, &mut chaos);
            let on_disk: Session = serde_json::from_str(&image).unwrap();
            check_journal_before_act(&effects, &s, &on_disk)?;
            if effects.contains(&Effect::Journal) {
                image = serde_json::to_string(&s).unwrap();
            }
            if let Some(p) = effects.iter().rev().find(|e| {
                matches!(e, Effect::Spawn(_) | Effect::Inspect { .. } | Effect::Fence { .. })
            }) {
                pending = Some(p.clone());
            }
            prop_assert!(effects.iter().filter(|e| matches!(e, Effect::Finish(_))).count() <= 1);
            let mut at = before;
            for e in &effects {
                if let Effect::Record(Record::StateChange(sc)) = e {
                    prop_assert_eq!(sc.from, at, "state changes chain");
                    let retake = matches!(sc.reason, Some(Reason::Retake { .. }))
                        && matches!(sc.from, SessionState::Failed | SessionState::Interrupted);
                    let cut = matches!(sc.reason, Some(Reason::HookInterrupted { .. }))
                        && sc.to == SessionState::Interrupted;
                    prop_assert!(allowed.contains(&(sc.from, sc.to)) || retake || cut,
                        "{:?} -> {:?} is not in the table", sc.from, sc.to);
                    prop_assert!(!ended, "a terminal session moved: {:?}", sc);
                    at = sc.to;
                }
            }
            prop_assert_eq!(at, s.state());
            if finished(&s) {
                ended = true;
                prop_assert!(!effects.iter().any(|e| matches!(e, Effect::Spawn(_))));
            }
            prop_assert_eq!(s.history.last().map(|h| h.state), Some(s.state()));
            for pair in s.history.windows(2) {
                let retake = matches!(
                    pair[1].reason,
                    Some(Reason::Retake { .. } | Reason::HookInterrupted { .. })
                );
                prop_assert!(allowed.contains(&(pair[0].state, pair[1].state)) || retake);
            }
            prop_assert!(!s.history.iter().any(|h| matches!(h.reason, Some(Reason::Internal { .. }))),
                "internal error: {:?}", s.history);
            if let Phase::Interrupted(p) = &s.phase {
                prop_assert!(p.cause.is_pause());
            }
        }
    }
}
