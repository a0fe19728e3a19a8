//! Loading: schema validation, limits, guard keys, hashing, the shipped policies.

use super::super::{PolicyError, PolicyHost, PolicyOptions};
use super::{host, load_err};
use std::path::Path;
use std::time::Duration;

#[test]
fn unknown_top_level_key_names_it_and_suggests() {
    let e = load_err("return {\n  verdikt = function() return 'done' end,\n}\n");
    let text = e.to_string();
    assert!(text.contains("unknown key `verdikt`"), "{text}");
    assert!(text.contains("did you mean verdict?"), "{text}");
    assert_eq!(e.location().as_deref(), Some("test.lua:2"));
}

#[test]
fn unknown_limits_key_suggests() {
    let e = load_err("return {\n  limits = {\n    max_iteratons = 3,\n  },\n}\n");
    let text = e.to_string();
    assert!(text.starts_with("load policy test.lua:3: "), "{text}");
    assert!(text.contains("did you mean max_iterations?"), "{text}");
}

#[test]
fn far_off_key_gets_no_suggestion() {
    let text = load_err("return { zzzzzzzz = 1 }").to_string();
    assert!(text.contains("unknown key `zzzzzzzz`"), "{text}");
    assert!(!text.contains("did you mean"), "{text}");
}

#[test]
fn wrong_types_are_load_errors() {
    for (src, needle) in [
        (
            "return { verdict = 3 }",
            "`verdict` must be a function, not number",
        ),
        ("return { limits = 'x' }", "`limits` must be a table"),
        (
            "return { guards = { ['AUDIT_PENDING -> AUDITOR_EXECUTING'] = true } }",
            "must be a function",
        ),
        (
            "return { redact = { 1 } }",
            "redact[1] must be a regex string",
        ),
        ("return { approve = 'yes' }", "`approve` must be a function"),
        (
            "return { limits = { max_iterations = 2.5 } }",
            "whole number",
        ),
        ("return { limits = { max_iterations = 0 } }", "at least 1"),
        (
            "return { limits = { inactivity_timeout = 'soon' } }",
            "is not a duration",
        ),
        ("return { limits = { grace_period = -1 } }", "non-negative"),
        ("return { [1] = 2 }", "top-level keys must be names"),
        ("return 42", "must return a table"),
    ] {
        let e = PolicyHost::from_source("test.lua", src, PolicyOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{src} loaded"));
        let text = e.to_string();
        assert!(text.contains(needle), "{src}: {text}");
        assert!(matches!(e, PolicyError::Load { .. }), "{src}: {e:?}");
    }
}

#[test]
fn syntax_error_has_file_and_line() {
    let e = load_err("return {\n  verdict = function(\n}\n");
    let PolicyError::Load { file, line, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(file, "test.lua");
    assert!(line.is_some(), "{e}");
    assert!(e.to_string().starts_with("load policy test.lua:"), "{e}");
}

#[test]
fn limits_defaults_and_parsing() {
    let h = host("return {}");
    assert_eq!(*h.limits(), super::super::Limits::default());
    assert_eq!(h.limits().inactivity_timeout, Duration::from_secs(300));
    assert_eq!(h.limits().grace_period, Duration::from_secs(5));
    let h = host(
        "return { limits = { max_iterations = 7, inactivity_timeout = '90s', worker_timeout = '5m', \
         auditor_timeout = 1.5, grace_period = '1h 30m' } }",
    );
    let l = h.limits();
    assert_eq!(l.max_iterations, 7);
    assert_eq!(l.inactivity_timeout, Duration::from_secs(90));
    assert_eq!(l.worker_timeout, Some(Duration::from_secs(300)));
    assert_eq!(l.auditor_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(l.grace_period, Duration::from_secs(90 * 60));
    let h = host("return { limits = { worker_timeout = false } }");
    assert_eq!(h.limits().worker_timeout, None);
}

#[test]
fn guard_keys_are_validated() {
    let h = host(
        "return { guards = { ['AUDIT_PENDING->AUDITOR_EXECUTING'] = function() return true end,\n\
         ['  REITERATION_PENDING   ->  WORKER_EXECUTING '] = function() return true end } }",
    );
    let hooks = h.hooks();
    assert!(hooks.contains(&"guards[AUDIT_PENDING -> AUDITOR_EXECUTING]".to_string()));
    assert!(hooks.contains(&"guards[REITERATION_PENDING -> WORKER_EXECUTING]".to_string()));

    let src = "return {\n guards = {\n  ['AUDIT_PENDING -> COMPLETED'] = function() return true end,\n },\n}";
    let e = load_err(src);
    assert!(e.to_string().contains("never makes"), "{e}");
    assert!(e.to_string().contains("AUDIT_PENDING -> COMPLETED"), "{e}");
    assert_eq!(e.location().as_deref(), Some("test.lua:3"));

    let e =
        load_err("return { guards = { ['AUDIT_PENDNG -> AUDITOR_EXECUTING'] = function() end } }");
    let text = e.to_string();
    assert!(text.contains("unknown state `AUDIT_PENDNG`"), "{text}");
    assert!(text.contains("did you mean AUDIT_PENDING?"), "{text}");

    let e = load_err("return { guards = { ['AUDIT_PENDING'] = function() end } }");
    assert!(e.to_string().contains("FROM -> TO"), "{e}");
}

#[test]
fn redact_patterns_are_checked() {
    let h = host(r#"return { redact = { "sk-[A-Za-z0-9]{20,}", "ghp_\\w+" } }"#);
    assert_eq!(h.redact_patterns(), ["sk-[A-Za-z0-9]{20,}", r"ghp_\w+"]);
    let e = load_err("return {\n redact = { 'ok', '(unclosed' },\n}");
    let text = e.to_string();
    assert!(text.contains("`(unclosed`"), "{text}");
    assert_eq!(e.location().as_deref(), Some("test.lua:2"));
}

#[test]
fn approve_is_listed_but_not_called_at_load() {
    let h = host("return { approve = function() error('must not be called') end }");
    assert_eq!(h.hooks(), ["approve"]);
}

#[test]
fn hooks_lists_what_is_present() {
    let h = host(
        "return { limits = {}, redact = {}, verdict = function() end, on_transition = function() end }",
    );
    assert_eq!(h.hooks(), ["limits", "verdict", "on_transition", "redact"]);
}

#[test]
fn hash_is_stable_and_tracks_content() {
    let a = host("return {}");
    let b = host("return {}");
    let c = host("return { }");
    assert_eq!(a.hash(), b.hash());
    assert_ne!(a.hash(), c.hash());
    assert!(a.hash().starts_with("sha256:"));
    assert_eq!(a.hash().len(), "sha256:".len() + 16);
}

#[test]
fn load_from_file_records_path_and_names_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.lua");
    std::fs::write(
        &path,
        "local x = 1\nreturn { verdict = function() error('boom') end }\n",
    )
    .unwrap();
    let h = PolicyHost::load(&path, PolicyOptions::default()).unwrap();
    assert_eq!(h.path(), Some(path.as_path()));
    let e = h.verdict("x", &super::full_ctx()).unwrap_err();
    assert!(e.to_string().contains("mine.lua:2: boom"), "{e}");
    assert_eq!(e.hook(), Some("verdict"));

    let missing = PolicyHost::load(&dir.path().join("nope.lua"), PolicyOptions::default());
    assert!(matches!(missing, Err(PolicyError::Read { .. })));
}

#[test]
fn shipped_policies_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    for name in ["default.lua", "strict.lua", "lenient.lua"] {
        let path = dir.join(name);
        if let Err(e) = PolicyHost::load(&path, PolicyOptions::default()) {
            panic!("{name}: {e}");
        }
    }
}
