//! The one reader of an agent's stdout protocol: splits the stream into lines, parses them with
//! the agent's [`LineParser`], keeps the [`Timeline`], and tells the loop what matters to the
//! session — the model made progress, the agent's own session began, a tool asks for
//! permission, the run's final result arrived. Its raw lines go to the log through the
//! pipeline as any output does; this only reads.

use super::{AgentFailure, OwnSession, RunEnd, Spent};
use crate::agent::{
    AgentEvent, AgentKind, AgentSpec, Delivery, Driver, DriverSetup, Launch, Narrative, Owner,
    Protocol, Reply, Say, Timeline, TurnChange, Turns,
};
use crate::executor::Supervised;

/// A line longer than this is not parsed (it still reaches the log): a protocol line that large
/// is a tool result carrying a whole file, and holding it twice would double the memory.
const MAX_LINE: usize = 8 * 1024 * 1024;

/// What one chunk of stdout meant.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// The model made progress (inactivity counts this, not retry notices).
    pub progress: bool,
    /// The agent's own session, the first time it is named.
    pub session: Option<OwnSession>,
    /// Tool permission questions, in order: (request id, tool, input).
    pub permissions: Vec<(String, String, serde_json::Value)>,
    /// The run's final result arrived.
    pub finished: bool,
    /// What the run has used so far, when it changed: model turns as they happen (the
    /// agent's answers), tokens where the agent reports them mid-run (Codex app-server).
    pub spent: Option<Spent>,
    /// Lines the protocol answers with at once (its handshake's next step, an error for a
    /// request oneshot does not serve), for the agent's stdin.
    pub replies: Vec<Reply>,
    /// Turns that began or ended, in order.
    pub turns: Vec<TurnChange>,
    /// Messages of ours the agent took in, by id.
    pub taken: Vec<String>,
    /// Messages of ours the agent refused, by id: the next prompt carries them.
    pub refused: Vec<String>,
}

/// Reads one agent run's stdout.
pub(crate) struct Tap {
    pub kind: AgentKind,
    driver: Box<dyn Driver>,
    pub timeline: Timeline,
    /// The run as a person reads it: the worker's output the auditor and the policy see.
    pub narrative: Narrative,
    partial: Vec<u8>,
    /// The current line grew past [`MAX_LINE`]: skip to its end.
    skipping: bool,
    events: Vec<AgentEvent>,
    /// The run's use last told to the session.
    told: Spent,
    /// The agent's working directory (where Claude's transcript is filed).
    cwd: std::path::PathBuf,
    /// Who owns the agent's turns, and what keeps its input open.
    turns: Turns,
    /// Messages said with `--now` while the agent ran a turn of its own: sent once that turn,
    /// interrupted for them, has ended (seed 004's atomic autonomous → foreground switch).
    after_teardown: Vec<Say>,
    /// Turn changes not yet handed to the loop (the prompt's, made before any output).
    changes: Vec<TurnChange>,
    /// The agent's input was closed: nothing more can be said to it.
    closed: bool,
    /// The run was asked to stop through the protocol: its input closes at the turn's end.
    stopping: bool,
    /// The ids of the assistant messages the agent's transcript already held when this run
    /// continued its conversation: earlier runs' messages, never this run's missing ones.
    pub(super) earlier: std::collections::HashSet<String>,
}

impl Tap {
    /// A tap for `kind` speaking `protocol`, its conversation set up by `setup`.
    pub fn new(kind: AgentKind, protocol: Protocol, setup: DriverSetup) -> Tap {
        let earlier = super::reconcile::earlier_messages(kind, &setup);
        Tap {
            earlier,
            kind,
            cwd: setup.cwd.clone(),
            driver: protocol.driver(setup),
            timeline: Timeline::new(),
            narrative: Narrative::new(crate::pipeline::DEFAULT_TAIL),
            partial: Vec::new(),
            skipping: false,
            events: Vec::new(),
            told: Spent::default(),
            turns: Turns::new(),
            after_teardown: Vec::new(),
            changes: Vec::new(),
            closed: false,
            stopping: false,
        }
    }

    /// The reader of `spec` running as `role` in `cwd`, started as `launch` says; `resume`
    /// continues its own earlier session where its protocol carries that.
    pub fn for_agent(
        spec: &AgentSpec,
        launch: &Launch,
        role: crate::process::Role,
        cwd: &std::path::Path,
        resume: Option<String>,
    ) -> Tap {
        let setup = DriverSetup {
            role,
            cwd: cwd.to_path_buf(),
            model: spec.model.clone(),
            resume,
        };
        Tap::new(spec.kind, launch.protocol, setup)
    }

    /// Takes a chunk of stdout (any boundaries).
    pub fn push(&mut self, mut bytes: &[u8]) -> Seen {
        let mut seen = Seen {
            turns: std::mem::take(&mut self.changes),
            ..Seen::default()
        };
        while let Some(nl) = bytes.iter().position(|&b| b == b'\n') {
            let (head, rest) = bytes.split_at(nl);
            bytes = &rest[1..];
            if self.skipping {
                self.skipping = false;
                continue;
            }
            if self.partial.is_empty() {
                self.line(head, &mut seen);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(head);
                self.line(&line, &mut seen);
                line.clear();
                self.partial = line;
            }
        }
        if !self.skipping && !bytes.is_empty() {
            if self.partial.len() + bytes.len() > MAX_LINE {
                self.partial.clear();
                self.skipping = true;
            } else {
                self.partial.extend_from_slice(bytes);
            }
        }
        let so_far = self.so_far();
        if so_far != self.told {
            self.told = so_far;
            seen.spent = Some(so_far);
        }
        seen
    }

    /// What the run has used so far: each answer the model gave is a turn (Claude reports its
    /// count only at the end), tokens and dollars as reported.
    fn so_far(&self) -> Spent {
        let reported = self.spent();
        let answers = u32::try_from(self.timeline.messages().len()).unwrap_or(u32::MAX);
        Spent {
            turns: reported.turns.max(answers),
            ..reported
        }
    }

    /// The stream ended (the process exited): a last line without a newline still counts.
    /// Returns what the run's end tells — the agent's session id if only now seen, its usage,
    /// its failure, its answer (raw: the caller redacts it).
    pub fn finish(&mut self) -> RunEnd {
        let mut seen = Seen::default();
        if !self.partial.is_empty() && !self.skipping {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, &mut seen);
        }
        let reconciled = self.reconcile();
        self.timeline.end_of_stream();
        self.narrative.finish();
        RunEnd {
            reconciled,
            session: seen.session,
            spent: self.spent(),
            failure: self.failure(),
            answer: self.answer(),
        }
    }

    /// Writes to `sup` the lines that open the conversation and carry `prompt` (none for an
    /// agent that only writes: its prompt went on its command line or stdin).
    pub fn open(&mut self, prompt: &str, sup: &Supervised) {
        let mut out = Vec::new();
        self.driver.open(prompt, &mut out);
        for line in out {
            sup.input(line);
        }
        self.changes.extend(self.turns.prompted());
    }

    /// Takes a chunk of stdout ([`Tap::push`]) and says back at once what the protocol needs
    /// said: its replies (the handshake's next step, an error for a request oneshot does not
    /// serve), messages held for the end of a turn, and the end of input once nothing keeps
    /// it open — no turn running, no background task, no message waiting to be taken in (each
    /// of these CLIs exits then). What is left for the caller — progress, the session,
    /// permission questions, turns — is returned.
    pub fn hear(&mut self, bytes: &[u8], sup: &mut Supervised) -> Seen {
        let mut seen = self.push(bytes);
        for line in seen.replies.drain(..) {
            sup.input(line);
        }
        if self.turns.owner() != Owner::Autonomous && !self.after_teardown.is_empty() {
            // The interrupted autonomous turn has ended: the foreground one starts now.
            for message in std::mem::take(&mut self.after_teardown) {
                let mut out = Vec::new();
                let delivery = self.driver.say(&message, &mut out);
                for line in out {
                    sup.input(line);
                }
                if delivery == Delivery::NextPrompt {
                    self.turns.message_dropped(&message.id);
                }
            }
        }
        // Asked to stop, the run ends with its turn, background tasks or not (Claude kills
        // them 5 s after its input ends; the group's stop follows if it does not).
        if !self.closed && (!self.turns.keep_open() || (self.stopping && seen.finished)) {
            self.close(sup);
        }
        seen
    }

    /// Closes the agent's input: the agent ends its run once it has finished what it started.
    pub fn close(&mut self, sup: &mut Supervised) {
        self.closed = true;
        sup.close_input();
    }

    /// Delivers a human's message to the running agent. A `now` message while the agent runs
    /// a turn of its own interrupts that turn and is sent once the turn has ended; otherwise
    /// the driver decides (sent, held until the running prompt returns, or — when the
    /// protocol cannot take one, or the input is already closed — left for the next prompt).
    pub fn say(&mut self, message: &Say, sup: &Supervised) -> Delivery {
        if self.closed {
            return Delivery::NextPrompt;
        }
        if message.now
            && self.turns.owner() == Owner::Autonomous
            && let Some(line) = self.driver.interrupt()
        {
            sup.input(line);
            self.turns.message_sent(&message.id);
            let mut later = message.clone();
            later.now = false;
            self.after_teardown.push(later);
            return Delivery::Held;
        }
        let mut out = Vec::new();
        let delivery = self.driver.say(message, &mut out);
        let mut written = true;
        for line in out {
            written &= sup.input(line);
        }
        if !written {
            return Delivery::NextPrompt;
        }
        if delivery != Delivery::NextPrompt {
            self.turns.message_sent(&message.id);
        }
        delivery
    }

    /// Asks the agent to stop its background tasks (the policy's `limits.background_wait` ran
    /// out); closes its input when the protocol cannot ask. Returns the tasks asked about.
    pub fn stop_background(&mut self, sup: &mut Supervised) -> Vec<String> {
        let tasks = self.turns.background();
        let mut asked = true;
        for task in &tasks {
            match self.driver.stop_task(task) {
                Some(line) => asked &= sup.input(line),
                None => asked = false,
            }
        }
        if !asked {
            self.close(sup);
        }
        tasks
    }

    /// Withdraws the messages sent and not yet taken in (the run is being stopped), where the
    /// protocol can; returns their ids — they go into the next prompt.
    pub fn withdraw_unanswered(&mut self, sup: &Supervised) -> Vec<String> {
        let ids: Vec<String> = self.turns.unanswered().map(str::to_owned).collect();
        for id in &ids {
            let mut out = Vec::new();
            if self.driver.withdraw(id, &mut out) {
                for line in out {
                    sup.input(line);
                }
            }
            self.turns.message_dropped(id);
        }
        self.after_teardown.clear();
        ids
    }

    /// The run waits on background tasks alone (no turn runs or is owed).
    pub fn waiting_on_background(&self) -> bool {
        !self.closed && self.turns.waiting_on_background()
    }

    /// The agent's working directory.
    pub(crate) fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    /// Who owns the agent's turn now.
    pub fn owner(&self) -> Owner {
        self.turns.owner()
    }

    /// Answers permission request `request_id` on `sup`, in the agent's protocol.
    pub fn permit(
        &mut self,
        request_id: &str,
        allow: bool,
        reason: Option<&str>,
        input: &serde_json::Value,
        sup: &Supervised,
    ) {
        if let Some(line) = self.driver.permit(request_id, allow, reason, input) {
            sup.input(line);
        }
    }

    /// The line that asks the agent to stop its turn, when its protocol has one; the timeline
    /// then counts the run's end as an interruption.
    pub fn interrupt(&mut self) -> Option<Reply> {
        let line = self.driver.interrupt()?;
        self.timeline.request_interrupt();
        self.stopping = true;
        Some(line)
    }

    fn line(&mut self, line: &[u8], seen: &mut Seen) {
        self.driver.feed(line, &mut self.events, &mut seen.replies);
        for event in self.events.drain(..) {
            seen.progress |= event.is_progress();
            seen.turns.extend(self.turns.apply(&event));
            match &event {
                AgentEvent::MessageTaken { message_id } => seen.taken.push(message_id.clone()),
                AgentEvent::MessageRefused { message_id, .. } => {
                    seen.refused.push(message_id.clone())
                }
                _ => {}
            }
            match &event {
                AgentEvent::SessionStarted {
                    session_id,
                    transcript,
                    ..
                } if self.timeline.session_id().is_none() => {
                    // The first one (the timeline takes it below). Claude and Gemini do not name their transcripts; where they file them
                    // is known.
                    let transcript = transcript.clone().or_else(|| {
                        transcript_of(self.kind, &self.cwd, session_id)
                            .map(|p| p.display().to_string())
                    });
                    seen.session = Some(OwnSession {
                        session_id: session_id.clone(),
                        transcript,
                    });
                }
                AgentEvent::PermissionRequest {
                    request_id,
                    tool,
                    input,
                    ..
                } => seen
                    .permissions
                    .push((request_id.clone(), tool.clone(), input.clone())),
                AgentEvent::Final { .. } => seen.finished = true,
                _ => {}
            }
            self.timeline.apply(&event);
            self.narrative.apply(&event);
        }
    }

    /// The agent's answer: its structured output when it gave one, else its final text, else
    /// its last assistant message. `None` for an agent whose protocol has no answer (Aider:
    /// its whole output is the answer).
    fn answer(&self) -> Option<String> {
        if self.kind == AgentKind::Aider {
            return None;
        }
        if let Some(v) = self.timeline.structured_output() {
            return Some(v.to_string());
        }
        if let Some(t) = self.timeline.final_text()
            && !t.trim().is_empty()
        {
            return Some(t.to_string());
        }
        self.timeline.last_assistant_message().map(|m| m.text())
    }

    /// What the run used, as the agent reported it.
    fn spent(&self) -> Spent {
        let u = self.timeline.usage();
        Spent {
            turns: u.turns,
            tokens: u.input_tokens.saturating_add(u.output_tokens),
            usd: u.cost_usd.unwrap_or(0.0),
        }
    }

    /// The failure the agent reported, if its run failed: the last error it named.
    pub fn failure(&self) -> Option<AgentFailure> {
        let failed = match self.timeline.final_result() {
            Some(f) => !f.success,
            // No final result: failed if an error was reported (Aider never sends one).
            None => !self.timeline.errors().is_empty(),
        };
        if !failed {
            return None;
        }
        let e = self.timeline.errors().last()?;
        Some(AgentFailure {
            agent: self.kind,
            kind: e.kind,
            status: e.status,
            message: e.message.clone(),
        })
    }
}

/// Where `kind`, run in `cwd`, files the transcript of `session` (its folder's definition says;
/// Codex names it itself).
fn transcript_of(
    kind: AgentKind,
    cwd: &std::path::Path,
    session: &str,
) -> Option<std::path::PathBuf> {
    (kind.def().transcript)(cwd, session)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude() -> Tap {
        Tap::new(AgentKind::Claude, Protocol::Claude, setup())
    }

    fn setup() -> DriverSetup {
        DriverSetup {
            role: crate::process::Role::Worker,
            cwd: ".".into(),
            model: None,
            resume: None,
        }
    }

    #[test]
    fn lines_split_across_chunks_are_parsed_once() {
        let mut t = claude();
        let init = br#"{"type":"system","subtype":"init","session_id":"s-1","tools":[]}"#;
        let (a, b) = init.split_at(20);
        assert!(t.push(a).session.is_none());
        let mut chunk = b.to_vec();
        chunk.extend_from_slice(b"\n{\"type\":\"control_request\",\"request_id\":\"r1\",\"request\":{\"subtype\":\"can_use_tool\",\"tool_name\":\"Bash\",\"input\":{\"command\":\"ls\"}}}\n");
        let seen = t.push(&chunk);
        assert_eq!(seen.session.unwrap().session_id, "s-1");
        assert_eq!(seen.permissions.len(), 1);
        assert_eq!(seen.permissions[0].1, "Bash");
        let seen = t.push(br#"{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s-1"}"#);
        assert!(!seen.finished, "no newline yet");
        let end = t.finish();
        assert_eq!(end.answer.as_deref(), Some("ok"));
        assert!(
            t.timeline.final_result().is_some(),
            "the last line was read"
        );
        assert!(
            end.spent.is_zero() && end.failure.is_none(),
            "no usage, no failure: {end:?}"
        );
    }

    #[test]
    fn retry_notices_are_not_progress() {
        let mut t = Tap::new(AgentKind::Codex, Protocol::Codex, setup());
        let seen = t
            .push(b"{\"type\":\"error\",\"message\":\"Reconnecting... 1/5 (last status: 500)\"}\n");
        assert!(!seen.progress);
        let seen = t.push(b"{\"type\":\"turn.started\"}\n");
        assert!(seen.progress);
    }

    #[test]
    fn an_overlong_line_is_skipped_and_the_next_one_read() {
        let mut t = claude();
        let big = vec![b'x'; MAX_LINE + 10];
        t.push(&big);
        t.push(b"still the same line\n");
        let seen = t.push(b"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s-2\"}\n");
        assert_eq!(seen.session.unwrap().session_id, "s-2");
    }

    #[test]
    fn aider_failures_are_read_from_its_words() {
        let mut t = Tap::new(AgentKind::Aider, Protocol::Aider, setup());
        t.push(b"litellm.AuthenticationError: Error code: 401 - bad key\n");
        let end = t.finish();
        assert_eq!(end.answer, None);
        let Some(f) = end.failure else {
            panic!("no failure: {end:?}");
        };
        assert_eq!(f.kind, crate::agent::ErrorKind::Auth);
    }
}
