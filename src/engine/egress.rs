//! The session's egress proxy, as the engine wires it: each agent's gateway, the questions its
//! proxy asks (answered by the decision core: [`Event::EgressAsked`]) and what it reports (a
//! refusal becomes [`Event::EgressRefused`]).

use crate::process::{NetworkMode, Role, Sandbox};
use crate::sandbox::egress::EgressAnswer;
use crate::sandbox::gateway::{AskingJudge, JudgeAsk, ModelApi, ProxyGateway};
use crate::sandbox::proxy::ProxyEvent;
use crate::session::Event;
use crate::session::record::{EgressRefusal, allow_hint};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

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
        }
    }

    /// Whether agents get a gateway (the egress proxy).
    pub(crate) fn on(&self) -> bool {
        self.on
    }

    /// The gateway for an agent named `agent` running as `role`, whose model API is `api`
    /// (its key from oneshot's environment); `None` when agents use the network as oneshot
    /// does.
    pub(crate) fn gateway(
        &self,
        agent: &str,
        role: Role,
        api: Option<&ModelApi>,
        forwards: Vec<u16>,
    ) -> Option<Arc<dyn crate::sandbox::Gateway>> {
        if !self.on {
            return None;
        }
        let var = |k: &str| std::env::var(k).ok();
        let model = api.and_then(|api| api.route(&var).map(|route| (*api, route)));
        Some(Arc::new(ProxyGateway {
            agent: agent.to_string(),
            role,
            judge: Arc::new(self.judge.clone()),
            model,
            events: self.events_tx.clone(),
            forwards,
        }))
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

    /// What a proxy reported, as the event the core records (only refusals are recorded).
    pub(super) fn reported(ev: ProxyEvent, now_ms: u64) -> Option<Event> {
        match ev {
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
