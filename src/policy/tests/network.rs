//! The sandbox's keys: `network`, `env`, the `egress` hook, `ctx.egress` and the resource
//! limits (`memory`, `pids`, `cpu`, `reserve`).

use super::super::{EgressDecision, EgressHookAnswer, EgressQuery, NOT_ALLOWED};
use super::{full_ctx, host, load_err};
use crate::policy::{FailMode, PolicyError, PolicyHost, PolicyOptions};
use crate::process::Role;
use crate::session::record::{EgressRefusal, allow_hint};
use std::time::Duration;

fn query(host: &str) -> EgressQuery {
    EgressQuery {
        host: host.into(),
        port: 443,
        agent: "claude".into(),
        role: Role::Worker,
    }
}

/// The load error's text, which names `test.lua` and the line.
fn load_message(source: &str) -> String {
    load_err(source).to_string()
}

#[test]
fn network_and_env_are_read_and_listed() {
    let h = host(
        r#"return {
  network = { allow = { "pypi.org", "*.npmjs.org", "127.0.0.1:8080" }, deny = { "10.0.0.0/8" } },
  env = { pass = { "NPM_TOKEN" }, drop = { "AWS_*" } },
}"#,
    );
    assert_eq!(
        h.network_rules().allow,
        ["pypi.org", "*.npmjs.org", "127.0.0.1:8080"]
    );
    assert_eq!(h.network_rules().deny, ["10.0.0.0/8"]);
    assert_eq!(h.env_rules().pass, ["NPM_TOKEN"]);
    assert_eq!(h.env_rules().drop, ["AWS_*"]);
    assert_eq!(h.hooks(), ["network", "env"]);
    // Without the keys: empty lists, as for the built-in policy.
    let none = host("return {}");
    assert!(none.network_rules().allow.is_empty() && none.env_rules().pass.is_empty());
    assert!(PolicyHost::builtin().network_rules().deny.is_empty());
}

#[test]
fn a_bad_network_pattern_fails_the_load_at_its_line() {
    let m = load_message(
        "return {\n  network = {\n    allow = {\n      \"pypi.org\",\n      \"https://evil.example/x\",\n    },\n  },\n}\n",
    );
    assert!(m.contains("test.lua:5"), "{m}");
    assert!(m.contains("network.allow"), "{m}");
    assert!(m.contains("no scheme or path"), "{m}");
    let m = load_message("return {\n  network = { deny = { \"*\" } },\n}\n");
    assert!(
        m.contains("test.lua:2") && m.contains("--network open"),
        "{m}"
    );
    let m = load_message("return {\n  network = { alow = { \"pypi.org\" } },\n}\n");
    assert!(
        m.contains("test.lua:2") && m.contains("did you mean allow"),
        "{m}"
    );
    let m = load_message("return { network = { allow = \"pypi.org\" } }");
    assert!(m.contains("must be a list of strings"), "{m}");
    let m = load_message("return { network = { allow = { 443 } } }");
    assert!(m.contains("network.allow[1] must be a string"), "{m}");
    let m = load_message("return { network = { allow = { x = \"pypi.org\" } } }");
    assert!(m.contains("no named keys"), "{m}");
}

#[test]
fn a_bad_env_pattern_fails_the_load_at_its_line() {
    let m =
        load_message("return {\n  env = {\n    pass = { \"NPM_TOKEN\", \"GH TOKEN\" },\n  },\n}\n");
    assert!(m.contains("test.lua:3"), "{m}");
    assert!(m.contains("env.pass"), "{m}");
    let m = load_message("return {\n  env = { keep = { \"X\" } },\n}\n");
    assert!(m.contains("unknown key `keep` in env"), "{m}");
    let m = load_message("return { env = { drop = { \"\" } } }");
    assert!(m.contains("empty pattern"), "{m}");
}

#[test]
fn resource_limits_are_parsed() {
    let h = host("return { limits = { memory = '2G', pids = 256, cpu = 1.5, reserve = '512M' } }");
    let l = h.limits();
    assert_eq!(l.memory, Some(2 << 30));
    assert_eq!(l.pids, Some(256));
    assert_eq!(l.cpu, Some(1.5));
    assert_eq!(l.reserve, Some(512 << 20));
    let l = *host("return { limits = { memory = 1073741824, reserve = 0 } }").limits();
    assert_eq!(l.memory, Some(1 << 30));
    assert_eq!(l.reserve, Some(0));
    assert_eq!(
        host("return { limits = { memory = '1.5GiB' } }")
            .limits()
            .memory,
        Some(3 << 29)
    );
    let l = *host("return { limits = { memory = false, cpu = false } }").limits();
    assert_eq!(
        (l.memory, l.pids, l.cpu, l.reserve),
        (None, None, None, None)
    );
}

#[test]
fn bad_resource_limits_say_why_and_where() {
    for (src, want) in [
        ("memory = 2", "write \"2G\""),
        ("memory = '2X'", "unknown unit"),
        ("memory = 1.5", "whole number of bytes"),
        ("memory = {}", "not table"),
        ("pids = 0", "at least 1"),
        ("pids = 2.5", "at least 1"),
        ("cpu = 0", "above 0"),
        ("cpu = 'two'", "not string"),
        ("reserve = '-1G'", "not a size"),
    ] {
        let m = load_message(&format!(
            "return {{\n  limits = {{\n    {src},\n  }},\n}}\n"
        ));
        assert!(m.contains("test.lua:3"), "{src}: {m}");
        assert!(m.contains(want), "{src}: {m}");
    }
}

#[test]
fn the_egress_hook_answers_allow_deny_or_leaves_it_to_the_default() {
    let h = host(
        r#"return {
  egress = function(ctx, req)
    if req.host == "ok.example" then return "allow" end
    if req.host == "yes.example" then return true, req.agent .. "/" .. req.role .. ":" .. req.port end
    if req.host == "paste.example" then return "deny", "no pastebins" end
    if req.host == "no.example" then return false end
  end,
}"#,
    );
    let ctx = full_ctx();
    let allow = |reason: Option<&str>| {
        EgressHookAnswer::Decided(EgressDecision {
            allow: true,
            reason: reason.map(String::from),
        })
    };
    assert_eq!(h.egress(&query("ok.example"), &ctx), allow(None));
    assert_eq!(
        h.egress(&query("yes.example"), &ctx),
        allow(Some("claude/worker:443"))
    );
    let paste = h.egress(&query("paste.example"), &ctx);
    assert!(!paste.allows());
    assert_eq!(paste.rule(), "no pastebins");
    let no = h.egress(&query("no.example"), &ctx);
    assert!(!no.allows());
    assert_eq!(
        no.rule(),
        "refused by the policy's egress hook at test.lua:2"
    );
    let other = h.egress(&query("other.example"), &ctx);
    assert_eq!(other, EgressHookAnswer::Default);
    assert_eq!(other.rule(), NOT_ALLOWED);
    assert!(h.has_hook("egress"));
    assert_eq!(h.hook_site("egress").as_deref(), Some("test.lua:2"));
    // Without a hook: the default.
    assert_eq!(
        host("return {}").egress(&query("ok.example"), &ctx),
        EgressHookAnswer::Default
    );
}

#[test]
fn a_failing_egress_hook_refuses_and_names_the_error() {
    let h = host("return {\n  egress = function(ctx, req)\n    error('boom')\n  end,\n}\n");
    let a = h.egress(&query("x.example"), &full_ctx());
    assert!(!a.allows());
    assert_eq!(
        a.rule(),
        "refused because the egress policy failed at test.lua:3: run hook egress: test.lua:3: boom"
    );
    let e = h.try_egress(&query("x.example"), &full_ctx()).unwrap_err();
    assert_eq!(e.hook(), Some("egress"));
    // A bad answer refuses too.
    for ret in ["'yes'", "1", "{}", "'allow', 42"] {
        let src = format!("return {{\n  egress = function()\n    return {ret}\n  end,\n}}\n");
        let a = host(&src).egress(&query("x.example"), &full_ctx());
        assert!(!a.allows(), "{ret}");
        assert!(a.rule().contains("test.lua:2"), "{ret}: {}", a.rule());
    }
    // The request is read-only: a hook that writes to it fails, and so refuses.
    let src = "return { egress = function(ctx, req) req.host = 'ok' return 'allow' end }";
    assert!(!host(src).egress(&query("x.example"), &full_ctx()).allows());
}

#[test]
fn a_runaway_egress_hook_refuses_at_its_budget() {
    let opts = PolicyOptions {
        hook_budget: Duration::from_millis(50),
        ..PolicyOptions::default()
    };
    let h = PolicyHost::from_source(
        "test.lua",
        "return {\n  egress = function()\n    while true do end\n  end,\n}\n",
        opts,
    )
    .unwrap();
    let a = h.egress(&query("x.example"), &full_ctx());
    assert!(!a.allows());
    assert!(a.rule().contains("50ms budget"), "{}", a.rule());
    let e = h.try_egress(&query("x.example"), &full_ctx()).unwrap_err();
    assert!(matches!(e, PolicyError::Budget { .. }), "{e:?}");
}

#[test]
fn egress_cannot_be_declared_open() {
    let m = load_message("return {\n  on_error = { egress = 'open' },\n}\n");
    assert!(
        m.contains("test.lua:2") && m.contains("egress fails closed"),
        "{m}"
    );
    let h = host("return { on_error = { egress = 'closed' } }");
    assert_eq!(h.fail_mode("egress"), FailMode::Closed);
}

#[test]
fn hooks_see_the_sessions_refusals_as_ctx_egress() {
    let h = host(
        r#"return {
  verdict = function(output, ctx)
    local e = ctx.egress[#ctx.egress]
    if e then
      return "impossible", #ctx.egress .. " refused; last " .. e.host .. ":" .. e.port
        .. " for " .. e.role .. " (" .. e.agent .. ") by " .. e.rule .. "; " .. e.hint
        .. "; " .. tostring(e.address)
    end
    return "done"
  end,
}"#,
    );
    let mut ctx = full_ctx();
    let done = h.verdict("", &ctx).unwrap();
    assert_eq!(done.verdict, Some(crate::machine::Verdict::Done));
    ctx.egress = vec![
        EgressRefusal {
            ts: 1,
            host: "a.example".into(),
            port: 80,
            agent: "codex".into(),
            role: Role::Auditor,
            rule: NOT_ALLOWED.into(),
            address: None,
            hint: allow_hint("a.example"),
        },
        EgressRefusal {
            ts: 2,
            host: "metadata.internal".into(),
            port: 443,
            agent: "claude".into(),
            role: Role::Worker,
            rule: "resolves to a link-local address".into(),
            address: Some("169.254.169.254".into()),
            hint: String::new(),
        },
    ];
    let v = h.verdict("", &ctx).unwrap();
    assert_eq!(
        v.reason.as_deref(),
        Some(
            "2 refused; last metadata.internal:443 for worker (claude) by resolves to a \
             link-local address; ; 169.254.169.254"
        )
    );
    // The list changes between calls (the ctx table is reused): the new one is seen.
    ctx.egress.truncate(1);
    let v = h.verdict("", &ctx).unwrap();
    assert!(
        v.reason
            .unwrap()
            .starts_with("1 refused; last a.example:80")
    );
}

#[test]
fn policy_tests_can_call_the_egress_hook() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.lua");
    std::fs::write(
        &policy,
        r#"return {
  egress = function(ctx, req)
    if req.host == "mirror.internal" and req.role == "worker" and req.port == 8443 then
      return "allow", "mirror for " .. req.agent
    end
    if req.host == "boom.example" then error("boom") end
  end,
  tests = {
    { hook = "egress", input = { host = "mirror.internal", port = 8443 }, expect = "allow",
      reason = "mirror for claude" },
    { hook = "egress", input = { host = "mirror.internal", port = 8443, role = "auditor" },
      expect = "deny", reason = "not on the policy's allowlist" },
    { hook = "egress", input = { host = "boom.example" }, error = "boom" },
    { name = "wrong", hook = "egress", input = { host = "x.example", agent = "codex" },
      expect = "allow" },
    { name = "no host", hook = "egress", input = { port = 1 }, expect = "deny" },
    { name = "bad port", hook = "egress", input = { host = "x", port = 0 }, expect = "deny" },
  },
}"#,
    )
    .unwrap();
    let report = crate::policy::run_tests(&policy, PolicyOptions::default()).unwrap();
    assert_eq!(
        report.summary(),
        "3 passed, 3 failed",
        "{}",
        report.render()
    );
    let rendered = report.render();
    assert!(
        rendered.contains("an egress case needs input.host"),
        "{rendered}"
    );
    assert!(
        rendered.contains("input.port must be a port number"),
        "{rendered}"
    );
}
