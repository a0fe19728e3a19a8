//! The `permit` hook: answers, reasons, the tool input as a table, failing closed, and the
//! built-in rule when the hook is absent.

use super::super::{
    AUDITOR_EDIT_REASON, FILE_EDIT_TOOLS, PermitDecision, PolicyError, PolicyHost, PolicyOptions,
    default_permit,
};
use super::{full_ctx, host, load_err};
use crate::process::Role;
use serde_json::json;
use std::time::Duration;

fn ask(h: &PolicyHost, tool: &str, input: serde_json::Value) -> PermitDecision {
    h.permit(Role::Worker, tool, &input, &full_ctx()).unwrap()
}

const NO_RM_RF: &str = r#"return {
  permit = function(tool, input, ctx)
    if tool == "Bash" and input.command:find("rm -rf", 1, true) then
      return "deny", "no rm -rf"
    end
    return "allow"
  end,
}"#;

#[test]
fn allow_and_deny_with_reason() {
    let h = host(NO_RM_RF);
    assert_eq!(
        ask(&h, "Bash", json!({ "command": "ls -la" })),
        PermitDecision::allow()
    );
    assert_eq!(
        ask(&h, "Bash", json!({ "command": "cd /tmp && rm -rf build" })),
        PermitDecision::deny("no rm -rf")
    );
    assert!(ask(&h, "Write", json!({ "file_path": "a.rs", "content": "x" })).allow);
}

#[test]
fn booleans_case_and_reasons_are_accepted() {
    for (ret, allow, reason) in [
        ("true", true, None),
        ("false", false, None),
        ("false, 'nope'", false, Some("nope")),
        ("'ALLOW', 'fine'", true, Some("fine")),
        ("' deny '", false, None),
    ] {
        let h = host(&format!(
            "return {{ permit = function() return {ret} end }}"
        ));
        let d = ask(&h, "Bash", json!({}));
        assert_eq!(
            (d.allow, d.reason.as_deref()),
            (allow, reason),
            "return {ret}"
        );
    }
}

#[test]
fn the_input_is_a_table_converted_from_json() {
    let h = host(
        r#"return { permit = function(tool, input, ctx, role)
          assert(input.nested.list[2] == "b", "list")
          assert(#input.nested.list == 3, "length")
          assert(input.missing == nil and input.null == nil, "null is nil")
          assert(input.n == 3 and input.f == 1.5 and input.yes == true, "scalars")
          assert(ctx.iteration == 2, "ctx")
          assert(role == "worker", "role")
          return "allow", tool
        end }"#,
    );
    let d = ask(
        &h,
        "Edit",
        json!({ "nested": { "list": ["a", "b", "c"] }, "null": null, "n": 3, "f": 1.5, "yes": true }),
    );
    assert_eq!(
        d,
        PermitDecision {
            allow: true,
            reason: Some("Edit".into())
        }
    );
}

#[test]
fn the_input_is_read_only_and_strings_are_capped() {
    let h =
        host(r#"return { permit = function(tool, input) input.command = "x" return "allow" end }"#);
    let d = ask(&h, "Bash", json!({ "command": "ls" }));
    assert!(!d.allow);
    let h = host(
        "return { permit = function(tool, input) return 'allow', tostring(#input.command) end }",
    );
    let big = "x".repeat(super::super::MAX_LUA_STRING + 10);
    let d = ask(&h, "Bash", json!({ "command": big }));
    assert_eq!(d.reason, Some(super::super::MAX_LUA_STRING.to_string()));
}

#[test]
fn too_deep_input_is_denied() {
    let h = host("return { permit = function() return 'allow' end }");
    let mut v = json!("leaf");
    for _ in 0..(super::super::MAX_INPUT_DEPTH + 1) {
        v = json!([v]);
    }
    let d = ask(&h, "Bash", v);
    assert!(!d.allow);
    assert!(d.reason.unwrap().contains("deeper than"));
}

#[test]
fn an_error_denies_and_names_file_and_line() {
    let h = host("return {\n  permit = function(tool, input)\n    error('boom')\n  end,\n}\n");
    let d = ask(&h, "Bash", json!({}));
    assert!(!d.allow);
    let reason = d.reason.unwrap();
    assert!(reason.contains("test.lua:3"), "{reason}");
    assert_eq!(
        reason,
        "denied because the permit policy failed at test.lua:3: run hook permit: test.lua:3: boom"
    );
    // The raw error is there for a caller that records it.
    let e = h
        .try_permit(Role::Worker, "Bash", &json!({}), &full_ctx())
        .unwrap_err();
    assert_eq!(e.kind(), "runtime");
    assert_eq!(e.hook(), Some("permit"));
}

#[test]
fn indexing_a_missing_field_denies() {
    // `input.command` is nil for a tool without one: the policy's bug must not allow.
    let h = host(NO_RM_RF);
    let d = ask(&h, "Bash", json!({ "cmd": "rm -rf /" }));
    assert!(!d.allow);
    assert!(d.reason.unwrap().contains("test.lua:3"));
}

#[test]
fn a_runaway_hook_denies_at_its_budget() {
    let opts = PolicyOptions {
        hook_budget: Duration::from_millis(50),
        ..PolicyOptions::default()
    };
    let h = PolicyHost::from_source(
        "test.lua",
        "return {\n  permit = function()\n    while true do end\n  end,\n}\n",
        opts,
    )
    .unwrap();
    let d = ask(&h, "Bash", json!({}));
    assert!(!d.allow);
    let reason = d.reason.unwrap();
    assert!(reason.contains("test.lua:2"), "{reason}");
    assert!(reason.contains("50ms budget"), "{reason}");
    // And the host still answers afterwards.
    let e = h
        .try_permit(Role::Worker, "Bash", &json!({}), &full_ctx())
        .unwrap_err();
    assert!(matches!(e, PolicyError::Budget { .. }), "{e:?}");
}

#[test]
fn a_bad_return_value_denies() {
    for ret in ["'yes'", "nil", "1", "{}", "'allow', 42"] {
        let src = format!("return {{\n  permit = function()\n    return {ret}\n  end,\n}}\n");
        let d = ask(&host(&src), "Bash", json!({}));
        assert!(!d.allow, "return {ret}");
        let reason = d.reason.unwrap();
        assert!(reason.contains("test.lua:2"), "{ret}: {reason}");
        assert!(reason.contains("expected"), "{ret}: {reason}");
    }
}

#[test]
fn absent_hook_uses_the_builtin_rule_by_role() {
    for h in [PolicyHost::builtin(), host("return {}")] {
        for tool in FILE_EDIT_TOOLS {
            assert!(
                h.permit(Role::Worker, tool, &json!({}), &full_ctx())
                    .unwrap()
                    .allow
            );
            assert_eq!(
                h.permit(Role::Auditor, tool, &json!({}), &full_ctx())
                    .unwrap(),
                PermitDecision::deny(AUDITOR_EDIT_REASON)
            );
        }
        for tool in ["Bash", "Read", "Grep", "command_execution", "read_file"] {
            assert!(
                h.permit(Role::Auditor, tool, &json!({}), &full_ctx())
                    .unwrap()
                    .allow,
                "{tool}"
            );
        }
    }
    assert_eq!(
        default_permit(Role::Worker, "Write"),
        PermitDecision::allow()
    );
    assert_eq!(
        default_permit(Role::Auditor, "apply_patch"),
        PermitDecision::deny("the auditor judges the work; it does not change files")
    );
}

#[test]
fn the_role_reaches_the_hook() {
    let h =
        host("return { permit = function(tool, input, ctx, role) return role == 'worker' end }");
    assert!(ask(&h, "Bash", json!({})).allow);
    assert!(
        !h.permit(Role::Auditor, "Bash", &json!({}), &full_ctx())
            .unwrap()
            .allow
    );
}

#[test]
fn permit_is_listed_and_must_be_a_function() {
    let h = host(NO_RM_RF);
    assert!(h.hooks().contains(&"permit".to_string()));
    assert!(h.has_hook("permit"));
    assert_eq!(h.hook_site("permit").as_deref(), Some("test.lua:2"));
    let e = load_err("return { permit = 'allow' }").to_string();
    assert!(e.contains("`permit` must be a function"), "{e}");
}

#[test]
fn permit_cannot_be_declared_open() {
    for value in ["'open'", "'allow'"] {
        let e = load_err(&format!(
            "return {{\n  on_error = {{\n    permit = {value},\n  }},\n}}\n"
        ));
        let text = e.to_string();
        assert!(text.contains("load policy test.lua:3"), "{text}");
        assert!(text.contains("never allowed"), "{text}");
    }
    let h = host("return { on_error = { permit = 'closed' } }");
    assert_eq!(h.fail_mode("permit"), super::super::FailMode::Closed);
    assert!(h.fail_modes().iter().any(|(k, _)| k == "permit"));
}

#[test]
fn continue_conversation_defaults_to_true() {
    assert!(PolicyHost::builtin().continue_conversation());
    assert!(host("return {}").continue_conversation());
    assert!(host("return { continue_conversation = true }").continue_conversation());
    let h = host("return { continue_conversation = false }");
    assert!(!h.continue_conversation());
    assert!(h.hooks().contains(&"continue_conversation".to_string()));
    let e = load_err("return {\n  continue_conversation = 'no',\n}\n");
    assert_eq!(e.location().as_deref(), Some("test.lua:2"));
    assert!(e.to_string().contains("must be true or false"), "{e}");
    let e = load_err("return { continue_conversaton = false }").to_string();
    assert!(e.contains("did you mean continue_conversation?"), "{e}");
}

#[test]
fn policy_tests_can_call_permit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.lua");
    std::fs::write(
        &path,
        NO_RM_RF.replace(
            "return {\n",
            "return {\n  tests = {\n    { hook = 'permit', input = { tool = 'Bash', input = { command = 'rm -rf /' } }, expect = 'deny', reason = 'no rm -rf' },\n    { hook = 'permit', input = { tool = 'Bash', input = { command = 'ls' } }, expect = 'allow' },\n    { hook = 'permit', input = { tool = 'Bash', input = { cmd = 'x' } }, error = 'attempt to index nil' },\n  },\n",
        ),
    )
    .unwrap();
    let report = super::super::run_tests(&path, PolicyOptions::default()).unwrap();
    assert_eq!(report.failed(), 0, "{}", report.render());
    assert_eq!(report.cases.len(), 3);
}
