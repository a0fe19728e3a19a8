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
    use crate::sandbox::gateway::{ModelApi, ProxyGateway};
    let (rules, env_rules) = match &req.permit {
        Some(p) => (
            p.policy.network_rules().await,
            p.policy.env_rules().await.unwrap_or_default(),
        ),
        None => Default::default(),
    };
    let api: Option<&ModelApi> = match &req.target {
        Target::Agent(a) => a.kind.model_api(),
        Target::Command(_) => None,
    };
    let var = |k: &str| std::env::var(k).ok();
    let model = api.and_then(|api| api.route(&var).map(|route| (*api, route)));
    let args: Vec<String> = match &req.target {
        Target::Agent(a) => a.argv().into_iter().chain(a.args.iter().cloned()).collect(),
        Target::Command(c) => shell_words::split(c).unwrap_or_default(),
    };
    let mut keep: Vec<String> = crate::sandbox::env::named_by_argv(args.iter().map(String::as_str));
    if let Target::Agent(a) = &req.target
        && model.is_none()
    {
        keep.extend(a.kind.credential_vars().iter().map(|v| v.to_string()));
    }
    let keep: Vec<&str> = keep.iter().map(String::as_str).collect();
    let filtered = crate::sandbox::env::filter(std::env::vars_os(), &env_rules, &keep);
    let inherited: Vec<(String, String)> = filtered
        .kept
        .iter()
        .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into()))
        .collect();
    let mut forwards = crate::sandbox::gateway::loopback_ports(
        inherited
            .iter()
            .chain(&req.env)
            .map(|(k, v)| (k.as_str(), v.as_str())),
        args.iter().map(String::as_str),
    );
    forwards.extend(
        rules
            .allow
            .iter()
            .filter_map(|a| crate::sandbox::gateway::loopback_port(a)),
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
    let gateway = ProxyGateway {
        agent: req.target.name(),
        role: req.role,
        judge: Arc::new(crate::sandbox::egress::StaticJudge(rules)),
        model,
        events,
        forwards,
    };
    (Arc::new(gateway), Arc::new(filtered.kept))
}
