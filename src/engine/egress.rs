//! The session's egress proxy, as the engine wires it: each agent's gateway, the questions its
//! proxy asks (answered by the decision core: [`Event::EgressAsked`]) and what it reports (a
//! refusal becomes [`Event::EgressRefused`]).

use crate::process::{NetworkMode, Role, Sandbox};
use crate::sandbox::egress::EgressAnswer;
use crate::sandbox::gateway::{AskingJudge, JudgeAsk, ProxyGateway};
use crate::sandbox::pointing::Pointing;
use crate::sandbox::proxy::ProxyEvent;
use crate::session::Event;
use crate::session::record::{EgressRefusal, allow_hint};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// The core's answer ([`crate::session::Effect::Egress`]) as the proxy takes it.
pub(super) fn answer(allow: bool, rule: String, private_ok: bool) -> EgressAnswer {
    if allow {
        EgressAnswer::Allow { rule, private_ok }
    } else {
        EgressAnswer::Deny { rule }
    }
}

/// The egress side of one session.
pub(crate) struct Egress {
    judge: AskingJudge,
    pub(super) asks: mpsc::UnboundedReceiver<JudgeAsk>,
    events_tx: mpsc::UnboundedSender<ProxyEvent>,
    pub(super) events: mpsc::UnboundedReceiver<ProxyEvent>,
    pending: HashMap<u64, oneshot::Sender<EgressAnswer>>,
    next: u64,
    /// Whether agents get a gateway at all (`--network open`, or no sandbox: they do not).
    on: bool,
    /// Tokens the model API's own `usage` counted for the running agent, when the proxy saw
    /// any of its responses (it holds the agent's key).
    run_tokens: Option<u64>,
    /// What the running agent's CLI last reported it spent (its turns and dollars stand; its
    /// tokens give way to the proxy's count).
    cli_progress: crate::session::Spent,
    /// An agent runs: its usage is told to the core as progress (after its end, only counted).
    running: bool,
}

impl Egress {
    /// The egress side for a session confined as `sandbox` with the network `mode`.
    pub(crate) fn new(sandbox: &Sandbox, mode: NetworkMode) -> Egress {
        let (judge, asks) = AskingJudge::new();
        let (events_tx, events) = mpsc::unbounded_channel();
        let on = mode != NetworkMode::Open && !matches!(sandbox, Sandbox::Off);
        Egress {
            judge,
            asks,
            events_tx,
            events,
            pending: HashMap::new(),
            next: 0,
            on,
            run_tokens: None,
            cli_progress: Default::default(),
            running: false,
        }
    }

    /// Whether agents get a gateway (the egress proxy).
    pub(crate) fn on(&self) -> bool {
        self.on
    }

    /// The gateway for an agent named `agent` running as `role`, pointed at its model API
    /// through the proxy as `model` says (when oneshot holds its key); `None` when agents use
    /// the network as oneshot does.
    pub(crate) fn gateway(
        &self,
        agent: &str,
        role: Role,
        model: Option<Pointing>,
        forwards: Vec<u16>,
    ) -> Option<Arc<dyn crate::sandbox::Gateway>> {
        if !self.on {
            return None;
        }
        Some(Arc::new(ProxyGateway {
            agent: agent.to_string(),
            role,
            judge: Arc::new(self.judge.clone()),
            model,
            events: self.events_tx.clone(),
            forwards,
        }))
    }

    /// The gateway for a check: judged as an agent's connections are (the core answers while
    /// the check runs: see `engine::checks`), known to the policy as the agent `check`; its
    /// refusals are reported as an agent's are.
    pub(crate) fn check_gateway(&self) -> Option<Arc<dyn crate::sandbox::Gateway>> {
        self.gateway("check", Role::Auditor, None, Vec::new())
    }

    /// A question from a proxy, as the event the core answers.
    pub(super) fn asked(&mut self, ask: JudgeAsk) -> Event {
        self.next += 1;
        self.pending.insert(self.next, ask.reply);
        Event::EgressAsked {
            ask: self.next,
            query: ask.query,
        }
    }

    /// The core's answer to question `ask`, back to the proxy that waits for it.
    pub(super) fn answer(&mut self, ask: u64, answer: EgressAnswer) {
        if let Some(reply) = self.pending.remove(&ask) {
            // A proxy that gave up waiting has refused already.
            let _ = reply.send(answer);
        }
    }

    /// A new agent run begins: its token count starts at nothing.
    pub(super) fn begin_run(&mut self) {
        self.run_tokens = None;
        self.cli_progress = Default::default();
        self.running = true;
    }

    /// What the running agent's CLI reported it spent so far, as the core is told it: its
    /// tokens the model API's own count once the proxy saw any (so a budget is judged by it
    /// while the agent runs, not only at its end).
    pub(super) fn progress(&mut self, spent: crate::session::Spent) -> crate::session::Spent {
        self.cli_progress = spent;
        crate::session::Spent {
            tokens: self.run_tokens.unwrap_or(spent.tokens),
            ..spent
        }
    }

    /// The running agent's tokens as its model API counted them, when the proxy saw them;
    /// reports still in the channel are read first (its last response ended just before it).
    pub(super) fn run_tokens(
        &mut self,
        queue: &mut std::collections::VecDeque<Event>,
    ) -> Option<u64> {
        while let Ok(ev) = self.events.try_recv() {
            queue.extend(self.reported(ev, crate::pipeline::now_ms()));
        }
        self.running = false;
        self.run_tokens
    }

    /// What a proxy reported, as the event the core hears: a refusal, to record; a response's
    /// usage, counted for the run and told as its progress.
    pub(super) fn reported(&mut self, ev: ProxyEvent, now_ms: u64) -> Option<Event> {
        match ev {
            ProxyEvent::Usage {
                provider,
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_write_tokens,
                ..
            } => {
                // Anthropic counts cache reads and writes apart from its input; the others
                // count them within it.
                let cached = match provider {
                    crate::sandbox::proxy::Provider::Anthropic => {
                        cache_read_tokens.saturating_add(cache_write_tokens)
                    }
                    _ => 0,
                };
                let n = input_tokens
                    .saturating_add(output_tokens)
                    .saturating_add(cached);
                let tokens = self.run_tokens.unwrap_or(0).saturating_add(n);
                self.run_tokens = Some(tokens);
                // The run's progress with the API's count, as soon as each response ends.
                self.running
                    .then_some(Event::AgentProgress(crate::session::Spent {
                        tokens,
                        ..self.cli_progress
                    }))
            }
            ProxyEvent::Refused {
                host,
                port,
                agent,
                role,
                rule,
                address,
            } => {
                // A `deny` pattern wins over any allow line: no hint then.
                let hint = if rule.starts_with("network.deny") {
                    String::new()
                } else {
                    allow_hint(&host)
                };
                Some(Event::EgressRefused(EgressRefusal {
                    ts: now_ms,
                    host,
                    port,
                    agent,
                    role,
                    rule,
                    address: address.map(|a| a.to_string()),
                    hint,
                }))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Spent;

    fn usage(input: u64, output: u64) -> ProxyEvent {
        ProxyEvent::Usage {
            provider: crate::sandbox::proxy::Provider::OpenAi,
            model: None,
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }
    }

    fn spent(turns: u32, tokens: u64) -> Spent {
        Spent {
            turns,
            tokens,
            usd: 0.0,
        }
    }

    #[test]
    fn a_runs_progress_carries_the_apis_token_count_while_it_runs() {
        let sandbox = Sandbox::Landlock { abi: 4 };
        let mut e = Egress::new(&sandbox, NetworkMode::Policy);
        e.begin_run();
        // Before the proxy saw a response, the CLI's own count stands.
        assert_eq!(e.progress(spent(1, 5)), spent(1, 5));
        // Each response's usage is progress at once, with the CLI's turns.
        let told = e.reported(usage(100, 20), 1);
        assert!(
            matches!(told, Some(Event::AgentProgress(ref s)) if *s == spent(1, 120)),
            "{told:?}"
        );
        // The CLI's next report keeps its turns; the tokens are the API's.
        assert_eq!(e.progress(spent(2, 7)), spent(2, 120));
        let mut queue = std::collections::VecDeque::new();
        assert_eq!(e.run_tokens(&mut queue), Some(120));
        // After the run's end, usage is counted but told to nobody.
        assert!(e.reported(usage(1, 1), 2).is_none());
        // The next run starts from nothing.
        e.begin_run();
        assert_eq!(e.progress(spent(1, 9)), spent(1, 9));
    }
}
