//! What an agent's connections through the egress proxy may reach: the proxy asks, the core
//! answers — `--network none` first, then the policy's `network` lists, then its `egress`
//! hook, and refused by default — and every refusal the proxy reports is recorded and joins
//! `ctx.egress`.

use super::step::Step;
use crate::policy::{EgressQuery, NOT_ALLOWED};
use crate::process::NetworkMode;
use crate::sandbox::egress::EgressAnswer;
use crate::session::record::{DecisionInput, DecisionResult, EgressRefusal, Record};
use std::sync::Arc;

/// What the rules before the `egress` hook say of a connection, in their order: the policy's
/// `deny` list; the agent's own model API (the registry's hosts: allowed unless denied, in
/// every mode, as its key route through the proxy is); `--network none`; the `allow` list.
/// `None`: the hook decides (and refuses by default). One reading for a session's core and an
/// ask's judge.
pub(crate) fn listed(
    rules: &crate::sandbox::egress::NetworkRules,
    query: &EgressQuery,
    network: NetworkMode,
) -> Option<EgressAnswer> {
    let listed = rules.decide(&query.host, query.port);
    if let Some(deny @ EgressAnswer::Deny { .. }) = listed {
        return Some(deny);
    }
    let own = crate::agent::AgentKind::named(&query.agent).is_some_and(|k| {
        k.api_hosts()
            .iter()
            .any(|h| h.eq_ignore_ascii_case(&query.host))
    });
    if own {
        return Some(EgressAnswer::Allow {
            rule: format!("{}'s own model API", query.agent),
            private_ok: false,
        });
    }
    if network == NetworkMode::None {
        return Some(EgressAnswer::Deny {
            rule: "the network is closed but for the model API (--network none)".into(),
        });
    }
    listed
}

/// The `egress` hook's decision as the proxy takes it: its yes with its reason (never a name
/// the policy lists, so a private address the host resolves to stays refused), its no, or —
/// when it decided nothing — the default refusal. One reading for the core and an ask's judge.
pub(crate) fn hook_answer(decision: Option<crate::policy::EgressDecision>) -> EgressAnswer {
    match decision {
        Some(d) if d.allow => EgressAnswer::Allow {
            rule: d
                .reason
                .unwrap_or_else(|| "the policy's egress hook".into()),
            private_ok: false,
        },
        Some(d) => EgressAnswer::Deny {
            rule: d
                .reason
                .unwrap_or_else(|| "refused by the policy's egress hook".into()),
        },
        None => EgressAnswer::Deny {
            rule: NOT_ALLOWED.into(),
        },
    }
}

impl Step<'_> {
    /// The egress proxy asks whether an agent may open a connection: answered at once with an
    /// [`Effect::Egress`](super::Effect::Egress). A hook that fails refuses (egress fails
    /// closed, like permit).
    pub(super) fn egress_asked(&mut self, ask: u64, query: EgressQuery) {
        let answer = self.egress_answer(&query);
        let (allow, rule, private_ok) = match answer {
            EgressAnswer::Allow { rule, private_ok } => (true, rule, private_ok),
            EgressAnswer::Deny { rule } => (false, rule, false),
        };
        self.out.push(super::Effect::Egress {
            ask,
            allow,
            rule,
            private_ok,
        });
    }

    fn egress_answer(&mut self, query: &EgressQuery) -> EgressAnswer {
        if let Some(answer) = listed(&self.d.network_rules(), query, self.s.settings.network) {
            return answer;
        }
        let ctx = self.s.hook_ctx(self.now);
        let answer = self.d.egress(query, &ctx);
        let input = DecisionInput::Egress {
            host: query.host.clone(),
            port: query.port,
            agent: query.agent.clone(),
            role: query.role,
            ctx: Arc::new(ctx),
        };
        match self.decided("egress", input, answer, |d| {
            DecisionResult::Egress(d.clone())
        }) {
            Ok(decision) => hook_answer(decision),
            Err(e) => EgressAnswer::Deny {
                rule: format!(
                    "refused because the egress policy failed: {} (egress fails closed)",
                    e.message
                ),
            },
        }
    }

    /// The proxy refused a connection: a record a person reads, and a fact hooks see.
    pub(super) fn egress_refused(&mut self, refusal: EgressRefusal) {
        self.s.note_egress(refusal.clone());
        self.record(Record::Egress(refusal));
        self.journal();
    }
}
