//! The `oneshot` helper table and the declared failure modes.

use super::super::{FailMode, PolicyError};
use super::{full_ctx, host, load_err};
use std::time::{Duration, Instant};

/// Evaluates `expr` inside a `next_prompt` hook and returns what `tostring` makes of it.
fn eval(expr: &str) -> Result<String, PolicyError> {
    let h = host(&format!(
        "return {{\n  next_prompt = function(ctx)\n    return tostring({expr})\n  end,\n}}\n"
    ));
    h.next_prompt(&full_ctx())
}

#[test]
fn glob_match() {
    assert_eq!(
        eval("oneshot.glob_match('src/**/*.rs', 'src/a/b.rs')").unwrap(),
        "true"
    );
    assert_eq!(
        eval("oneshot.glob_match('*.rs', 'src/b.rs')").unwrap(),
        "false"
    );
    assert_eq!(
        eval("oneshot.glob_match('*.lock', 'Cargo.lock')").unwrap(),
        "true"
    );
    let e = eval("oneshot.glob_match('a[', 'x')")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("test.lua:3: oneshot.glob_match: invalid glob \"a[\""),
        "{e}"
    );
    let e = eval("oneshot.glob_match(nil, 'x')")
        .unwrap_err()
        .to_string();
    assert!(e.contains("the pattern must be a string, not nil"), "{e}");
}

#[test]
fn regex_find_returns_match_positions_and_captures() {
    let h = host(
        "return { next_prompt = function(ctx)\n\
           local m, s, e, word = oneshot.regex_find('VERDICT: (\\\\w+)', 'ok\\nVERDICT: DONE')\n\
           local none = oneshot.regex_find('x+', 'abc')\n\
           return table.concat({m, s, e, word, tostring(none)}, '|')\n\
         end }",
    );
    assert_eq!(
        h.next_prompt(&full_ctx()).unwrap(),
        "VERDICT: DONE|4|16|DONE|nil"
    );
    let e = eval("oneshot.regex_find('(', 'x')")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("test.lua:3: oneshot.regex_find: invalid regex \"(\""),
        "{e}"
    );
    let e = eval("oneshot.regex_find('a{1000}{1000}', 'x')")
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid regex"), "{e}");
    let e = eval("oneshot.regex_find('a', string.rep('x', 300000))")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the text is 300000 bytes; the limit is 262144"),
        "{e}"
    );
}

#[test]
fn regex_find_is_linear_on_pathological_input() {
    let h = host(
        "return { next_prompt = function(ctx)\n\
           return tostring(oneshot.regex_find('(a+)+$', string.rep('a', 100000) .. 'b'))\n\
         end }",
    );
    let start = Instant::now();
    assert_eq!(h.next_prompt(&full_ctx()).unwrap(), "nil");
    assert!(
        start.elapsed() < Duration::from_millis(100),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn json_decode() {
    let h = host(
        "return { next_prompt = function(ctx)\n\
           local v = oneshot.json_decode('{\"verdict\": \"retry\", \"n\": [1, null, 3.5], \"ok\": true}')\n\
           local bad, why = oneshot.json_decode('not json')\n\
           return table.concat({v.verdict, #v.n, tostring(v.n[2] == oneshot.null), v.n[3], tostring(v.ok), tostring(bad), why}, '|')\n\
         end }",
    );
    let out = h.next_prompt(&full_ctx()).unwrap();
    assert!(
        out.starts_with("retry|3|true|3.5|true|nil|invalid JSON"),
        "{out}"
    );
    assert_eq!(eval("oneshot.null").unwrap(), "oneshot.null");
    // Deeper than the cap: nil and a reason, not a stack overflow.
    let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let out = eval(&format!("select(2, oneshot.json_decode('{deep}'))")).unwrap();
    assert!(out.contains("deeper than 64"), "{out}");
    let deep = format!("{}{}", "[".repeat(10000), "]".repeat(10000));
    assert!(eval(&format!("oneshot.json_decode('{deep}')")).unwrap() == "nil");
    let e = eval("oneshot.json_decode({})").unwrap_err().to_string();
    assert!(e.contains("the text must be a string, not table"), "{e}");
}

#[test]
fn duration() {
    assert_eq!(eval("oneshot.duration('90s')").unwrap(), "90");
    assert_eq!(eval("oneshot.duration('1h 30m')").unwrap(), "5400");
    assert_eq!(eval("oneshot.duration(1.5)").unwrap(), "1.5");
    let e = eval("oneshot.duration('soon')").unwrap_err().to_string();
    assert!(
        e.contains("test.lua:3: oneshot.duration: \"soon\" is not a duration"),
        "{e}"
    );
    assert!(eval("oneshot.duration(-1)").is_err());
}

#[test]
fn log_is_collected_and_validated() {
    let h = host(
        "return { next_prompt = function(ctx)\n\
           oneshot.log('info', 'iteration ' .. ctx.iteration)\n\
           oneshot.log('warn', 42)\n\
           return 'x'\n\
         end }",
    );
    h.next_prompt(&full_ctx()).unwrap();
    assert_eq!(
        h.take_logs(),
        vec![
            ("info".to_string(), "iteration 2".to_string()),
            ("warn".to_string(), "42".to_string())
        ]
    );
    assert!(h.take_logs().is_empty());
    let e = eval("oneshot.log('loud', 'x')").unwrap_err().to_string();
    assert!(e.contains("oneshot.log: unknown level \"loud\""), "{e}");
    // A chatty loop is bounded.
    let h = host(
        "return { next_prompt = function() for i = 1, 1000 do oneshot.log('debug', 'x') end return 'x' end }",
    );
    h.next_prompt(&full_ctx()).unwrap();
    let logs = h.take_logs();
    assert_eq!(logs.len(), 257);
    assert!(logs[256].1.contains("744 more"), "{:?}", logs[256]);
}

#[test]
fn oneshot_table_is_read_only() {
    let e = eval("(function() oneshot.log = print end)()").unwrap_err();
    assert!(matches!(e, PolicyError::Sandbox { .. }), "{e:?}");
}

#[test]
fn fail_modes_default_and_override() {
    let h = host("return {}");
    for hook in [
        "verdict",
        "salvage",
        "next_prompt",
        "audit_prompt",
        "guard",
        "guards[A -> B]",
        "load",
    ] {
        assert_eq!(h.fail_mode(hook), FailMode::Closed, "{hook}");
    }
    assert_eq!(h.fail_mode("on_transition"), FailMode::Open);
    let h = host(
        "return { on_error = { on_transition = 'closed', guard = 'open', verdict = 'closed' } }",
    );
    assert_eq!(h.fail_mode("on_transition"), FailMode::Closed);
    assert_eq!(
        h.fail_mode("guards[AUDIT_PENDING -> AUDITOR_EXECUTING]"),
        FailMode::Open
    );
    assert_eq!(h.fail_mode("verdict"), FailMode::Closed);
    assert!(h.hooks().contains(&"on_error".to_string()));
}

#[test]
fn decision_hooks_cannot_fail_open() {
    let e = load_err("return {\n  on_error = {\n    verdict = 'open',\n  },\n}");
    let text = e.to_string();
    assert!(
        text.starts_with("load policy test.lua:3: on_error.verdict cannot be \"open\""),
        "{text}"
    );
    assert!(text.contains("no safe answer to fall back to"), "{text}");
    let e = load_err("return { on_error = { guards = 'open' } }").to_string();
    assert!(
        e.contains("unknown key `guards` in on_error; did you mean guard?"),
        "{e}"
    );
    let e = load_err("return { on_error = { guard = 'maybe' } }").to_string();
    assert!(
        e.contains("must be \"open\" or \"closed\", not \"maybe\""),
        "{e}"
    );
}

#[test]
fn on_notify_always_fails_open() {
    assert_eq!(host("return {}").fail_mode("on_notify"), FailMode::Open);
    let h = host("return { on_error = { on_notify = 'open' }, on_notify = function() end }");
    assert_eq!(h.fail_mode("on_notify"), FailMode::Open);
    assert!(h.hooks().contains(&"on_notify".to_string()));
    assert!(h.has_hook("on_notify"));
    assert_eq!(h.hook_site("on_notify").as_deref(), Some("test.lua:1"));
    let e = load_err("return {\n  on_error = {\n    on_notify = 'closed',\n  },\n}").to_string();
    assert!(
        e.starts_with("load policy test.lua:3: on_error.on_notify cannot be \"closed\""),
        "{e}"
    );
    assert!(e.contains("always sent as it is"), "{e}");
    let e = load_err("return { on_notify = 'quiet' }").to_string();
    assert!(e.contains("`on_notify` must be a function"), "{e}");
}
