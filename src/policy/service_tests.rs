//! `PolicyService` from other threads and runtimes, against real Luau.

use super::*;
use crate::policy::AUDITOR_EDIT_REASON;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn serve(source: &'static str) -> PolicyService {
    PolicyService::spawn(None, move || {
        PolicyHost::from_source("svc.lua", source, PolicyOptions::default())
    })
    .await
    .unwrap()
}

fn ctx() -> Arc<HookCtx> {
    Arc::new(HookCtx {
        task: "judge it".into(),
        diff: Some("+hello".into()),
        ..HookCtx::default()
    })
}

#[test]
fn the_handle_is_send_and_sync() {
    fn both<T: Send + Sync + Clone>() {}
    both::<PolicyService>();
}

#[test]
fn permit_is_answered_by_the_hook_from_other_threads() {
    let svc = rt().block_on(serve(
        r#"return { permit = function(tool, input, ctx, role)
            if tool == "Bash" and input.command == "rm -rf /" then
                return "deny", "not that (" .. role .. ", " .. ctx.diff .. ")"
            end
            return "allow"
        end }"#,
    ));
    let ctx = ctx();
    // From spawned tasks (which must be `Send`), some at once.
    let rt = rt();
    let answers = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for cmd in ["ls", "rm -rf /", "cat a"] {
            let (svc, ctx) = (svc.clone(), Arc::clone(&ctx));
            set.spawn(async move {
                let input = serde_json::json!({ "command": cmd });
                (cmd, svc.permit(Role::Auditor, "Bash", &input, &ctx).await)
            });
        }
        let mut out = Vec::new();
        while let Some(r) = set.join_next().await {
            out.push(r.unwrap());
        }
        out.sort_by_key(|(c, _)| *c);
        out
    });
    assert_eq!(answers[0].1, PermitDecision::allow(), "cat a");
    assert_eq!(answers[1].1, PermitDecision::allow(), "ls");
    assert_eq!(
        answers[2].1,
        PermitDecision::deny("not that (auditor, +hello)"),
        "rm -rf /"
    );
    // And from a plain thread, through its own runtime.
    let from_thread = std::thread::spawn(move || {
        let input = serde_json::json!({ "command": "rm -rf /" });
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(svc.permit(Role::Auditor, "Bash", &input, &ctx))
    })
    .join()
    .unwrap();
    assert!(!from_thread.allow);
}

#[test]
fn a_failing_permit_hook_is_a_deny_that_names_the_error() {
    let rt = rt();
    let svc = rt.block_on(serve(
        r#"return { permit = function(tool, input, ctx, role)
            error("no permits today")
        end }"#,
    ));
    let d = rt.block_on(svc.permit(Role::Auditor, "Read", &serde_json::json!({}), &ctx()));
    assert!(!d.allow);
    let why = d.reason.unwrap();
    assert!(why.contains("no permits today"), "{why}");
    assert!(why.contains("svc.lua:"), "the line is named: {why}");
}

#[test]
fn without_a_permit_hook_the_built_in_rule_answers() {
    let rt = rt();
    let svc = rt.block_on(PolicyService::start(None, PolicyOptions::default()));
    let svc = svc.unwrap();
    assert_eq!(svc.hash(), "builtin");
    let edit = rt.block_on(svc.permit(Role::Auditor, "Write", &serde_json::json!({}), &ctx()));
    assert_eq!(edit, PermitDecision::deny(AUDITOR_EDIT_REASON));
    let read = rt.block_on(svc.permit(Role::Auditor, "Read", &serde_json::json!({}), &ctx()));
    assert_eq!(read, PermitDecision::allow());
}

#[test]
fn a_service_whose_thread_is_gone_denies() {
    let rt = rt();
    let svc = rt.block_on(serve(
        r#"return { permit = function() return "allow" end }"#,
    ));
    // A question that kills the thread (a panic stands for any bug on it).
    let died = rt.block_on(svc.call("test", |_| -> Result<(), PolicyError> {
        panic!("the policy's thread dies")
    }));
    assert!(died.unwrap_err().to_string().contains(SERVICE_GONE));
    let d = rt.block_on(svc.permit(Role::Auditor, "Read", &serde_json::json!({}), &ctx()));
    assert!(!d.allow);
    assert!(d.reason.unwrap().contains(SERVICE_GONE));
}

#[test]
fn prompt_and_verdict_come_from_the_hooks() {
    let rt = rt();
    let svc = rt.block_on(serve(
        r#"return {
            audit_prompt = function(ctx) return "judge " .. ctx.task .. " by " .. ctx.diff end,
            verdict = function(output, ctx)
                local s = ctx.structured
                if s.verdict == "done" and (s.confidence or 0) < 0.9 then
                    return "retry", "not sure enough"
                end
                return s.verdict, s.reason, s.confidence
            end,
        }"#,
    ));
    let prompt = rt.block_on(svc.audit_prompt_hook(&ctx())).unwrap();
    assert_eq!(prompt.as_deref(), Some("judge judge it by +hello"));
    let answer = serde_json::json!({"verdict": "done", "reason": "fine", "confidence": 0.5});
    let mut c = (*ctx()).clone();
    c.structured = Some(answer.clone());
    let v = rt
        .block_on(svc.verdict(&answer.to_string(), &Arc::new(c)))
        .unwrap();
    assert_eq!(v.verdict, Some(crate::machine::Verdict::Retry));
    assert_eq!(v.reason.as_deref(), Some("not sure enough"));
    let none = rt.block_on(serve("return {}"));
    assert_eq!(rt.block_on(none.audit_prompt_hook(&ctx())).unwrap(), None);
}

#[test]
fn egress_is_answered_on_the_policy_thread_and_fails_closed() {
    let rt = rt();
    let svc = rt.block_on(serve(
        r#"return {
            network = { allow = { "pypi.org" } },
            env = { pass = { "NPM_TOKEN" } },
            egress = function(ctx, req)
                if req.host == "boom.example" then error("no network today") end
                if req.host == "ok.example" and req.role == "worker" then
                    return "allow", req.agent .. " may"
                end
            end,
        }"#,
    ));
    let ask = |host: &str| EgressQuery {
        host: host.into(),
        port: 443,
        agent: "claude".into(),
        role: Role::Worker,
    };
    let ok = rt.block_on(svc.egress(ask("ok.example"), &ctx()));
    assert_eq!(
        ok,
        EgressHookAnswer::Decided(EgressDecision {
            allow: true,
            reason: Some("claude may".into())
        })
    );
    let other = rt.block_on(svc.egress(ask("other.example"), &ctx()));
    assert_eq!(other, EgressHookAnswer::Default);
    assert!(!other.allows());
    let boom = rt.block_on(svc.egress(ask("boom.example"), &ctx()));
    assert!(!boom.allows());
    assert!(boom.rule().contains("no network today"), "{}", boom.rule());
    assert!(boom.rule().contains("svc.lua:"), "{}", boom.rule());
    let rules = rt.block_on(svc.network_rules());
    assert_eq!(rules.allow, ["pypi.org"]);
    let env = rt.block_on(svc.env_rules()).unwrap();
    assert_eq!(env.pass, ["NPM_TOKEN"]);
    // A thread that is gone refuses.
    let _ = rt.block_on(svc.call("test", |_| -> Result<(), PolicyError> {
        panic!("the policy's thread dies")
    }));
    let gone = rt.block_on(svc.egress(ask("ok.example"), &ctx()));
    assert!(!gone.allows());
    assert!(gone.rule().contains(SERVICE_GONE), "{}", gone.rule());
    assert!(rt.block_on(svc.env_rules()).is_err());
}

#[test]
fn a_policy_that_does_not_load_is_the_start_error() {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.lua");
    std::fs::write(&p, "return 42").unwrap();
    let e = rt
        .block_on(PolicyService::start(Some(p), PolicyOptions::default()))
        .unwrap_err();
    assert!(e.to_string().contains("bad.lua"), "{e}");
}
