//! A confined ask target's way out: the egress proxy and the environment it starts from.

use super::{Ask, Target};
use std::sync::Arc;

/// A confined target's way out: the egress proxy, judged as a session's agents are (the
/// asking policy's `network` lists, the target's own model API, then its `egress` hook with the
/// ask's `ctx`; refused by default), with its model API's key held by the proxy; and the
/// environment it starts from, credentials left out unless the policy's `env` passes them.
/// Refusals are said in oneshot's diagnostics (an ask keeps no log of its own).
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
        judge: Arc::new(AskJudge {
            rules,
            hook: req
                .permit
                .as_ref()
                .map(|p| (p.policy.clone(), Arc::clone(&p.ctx))),
        }),
        model: outfit.model,
        events,
        forwards: outfit.forwards,
    };
    (Arc::new(gateway), Arc::new(outfit.env))
}

/// An ask's egress judge: the rules a session's core applies before its hook
/// ([`crate::session::egress_listed`]), then the asking policy's `egress` hook.
struct AskJudge {
    rules: crate::sandbox::egress::NetworkRules,
    hook: Option<(crate::policy::PolicyService, Arc<crate::policy::HookCtx>)>,
}

impl crate::sandbox::egress::EgressJudge for AskJudge {
    fn judge(
        &self,
        req: crate::sandbox::egress::EgressRequest,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = crate::sandbox::egress::EgressAnswer> + Send>,
    > {
        use crate::sandbox::egress::EgressAnswer;
        let query = crate::policy::EgressQuery {
            host: req.host,
            port: req.port,
            agent: req.agent,
            role: req.role,
        };
        let listed =
            crate::session::egress_listed(&self.rules, &query, crate::process::NetworkMode::Policy);
        if let Some(answer) = listed {
            return Box::pin(std::future::ready(answer));
        }
        let Some((policy, ctx)) = self.hook.clone() else {
            return Box::pin(std::future::ready(EgressAnswer::Deny {
                rule: crate::policy::NOT_ALLOWED.into(),
            }));
        };
        Box::pin(async move {
            crate::session::egress_hook_answer(match policy.egress(query, &ctx).await {
                crate::policy::EgressHookAnswer::Decided(d) => Some(d),
                crate::policy::EgressHookAnswer::Default => None,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{HookCtx, PolicyHost, PolicyOptions, PolicyService};
    use crate::process::Role;
    use crate::sandbox::egress::{EgressAnswer, EgressJudge, EgressRequest, NetworkRules};

    fn req(host: &str, agent: &str) -> EgressRequest {
        EgressRequest {
            host: host.into(),
            port: 443,
            agent: agent.into(),
            role: Role::Auditor,
        }
    }

    #[test]
    fn an_asks_target_is_judged_by_the_lists_its_own_api_and_the_hook() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let policy = PolicyService::spawn(None, || {
                PolicyHost::from_source(
                    "ask.lua",
                    r#"return { egress = function(ctx, req)
                        if req.host == "docs.example" then return "allow", "docs for " .. ctx.task end
                        if req.host == "paste.example" then return "deny", "zq-no-pastes" end
                    end }"#,
                    PolicyOptions::default(),
                )
            })
            .await
            .unwrap();
            let ctx = Arc::new(HookCtx {
                task: "the question".into(),
                ..HookCtx::default()
            });
            let rules = NetworkRules {
                allow: vec!["pypi.org".into()],
                deny: vec!["api.anthropic.com".into()],
            };
            let judge = AskJudge {
                rules: rules.clone(),
                hook: Some((policy, ctx)),
            };
            let allowed = |a: &EgressAnswer| matches!(a, EgressAnswer::Allow { .. });
            // The lists first: allowed, and a deny that wins over the agent's own API.
            assert!(allowed(&judge.judge(req("pypi.org", "claude")).await));
            assert!(!allowed(&judge.judge(req("api.anthropic.com", "claude")).await));
            // Its own model API, as a session's agent has it.
            let own = judge.judge(req("api.openai.com", "codex")).await;
            assert!(allowed(&own), "{own:?}");
            // The hook, with the ask's ctx.
            assert_eq!(
                judge.judge(req("docs.example", "claude")).await,
                EgressAnswer::Allow {
                    rule: "docs for the question".into(),
                    private_ok: false
                }
            );
            assert_eq!(
                judge.judge(req("paste.example", "claude")).await,
                EgressAnswer::Deny {
                    rule: "zq-no-pastes".into()
                }
            );
            // Nothing said: refused by default; without a policy, the lists alone.
            assert!(!allowed(&judge.judge(req("other.example", "claude")).await));
            let bare = AskJudge { rules, hook: None };
            assert!(allowed(&bare.judge(req("pypi.org", "claude")).await));
            assert!(!allowed(&bare.judge(req("docs.example", "claude")).await));
        });
    }
}
