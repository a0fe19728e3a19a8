//! A confined ask target's way out: the egress proxy and the environment it starts from.

use super::{Ask, Target};
use std::sync::Arc;

/// A confined target's way out: the egress proxy, judged by the asking policy's `network`
/// lists (no hook: an ask has no session to record its questions), with its model API's key
/// held by the proxy; and the environment it starts from, credentials left out unless the
/// policy's `env` passes them. Refusals are said in oneshot's diagnostics.
pub(super) async fn way_out(
    req: &Ask,
) -> (
    Arc<dyn crate::sandbox::Gateway>,
    Arc<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
) {
    let (rules, env_rules) = match &req.permit {
        Some(p) => (
            p.policy.network_rules().await,
            p.policy.env_rules().await.unwrap_or_default(),
        ),
        None => Default::default(),
    };
    let vars: Vec<_> = std::env::vars_os().collect();
    let (agent, argv) = match &req.target {
        Target::Agent(a) => (
            Some(a),
            a.argv().into_iter().chain(a.args.iter().cloned()).collect(),
        ),
        Target::Command(c) => (None, shell_words::split(c).unwrap_or_default()),
    };
    let own_dir = agent.and_then(|a| a.own_dir(&vars));
    let outfit = crate::sandbox::outfit::outfit(
        crate::sandbox::outfit::Wearer {
            api: agent.and_then(|a| a.kind.model_api()),
            credential_vars: agent.map_or(&[], |a| a.kind.credential_vars()),
            words: crate::sandbox::pointing::AgentWords {
                argv: &argv,
                user_args: agent.map_or(&[], |a| &a.args[..]),
                program_len: agent.map_or(0, |a| a.argv().len()),
                own_dir: own_dir.as_deref(),
            },
            extra_env: &req.env,
        },
        &vars,
        &env_rules,
        &rules,
        true,
        true,
    );
    let (events, mut reports) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(ev) = reports.recv().await {
            if let crate::sandbox::proxy::ProxyEvent::Refused {
                host, port, rule, ..
            } = ev
            {
                tracing::warn!(%host, port, %rule, "egress refused to an ask's target");
            }
        }
    });
    let gateway = crate::sandbox::gateway::ProxyGateway {
        agent: req.target.name(),
        role: req.role,
        judge: Arc::new(crate::sandbox::egress::StaticJudge(rules)),
        model: outfit.model,
        events,
        forwards: outfit.forwards,
    };
    (Arc::new(gateway), Arc::new(outfit.env))
}
