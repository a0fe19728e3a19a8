//! Sandbox escapes, the wall-clock budget and the memory cap.

use super::super::{LOAD_HOOK, PolicyError, PolicyHost, PolicyOptions};
use super::{full_ctx, host, load_err};
use std::time::{Duration, Instant};

/// Runs `body` inside a `next_prompt` hook and returns the error.
fn hook_err(body: &str) -> PolicyError {
    let h = host(&format!(
        "return {{\n  next_prompt = function(ctx)\n    {body}\n    return 'x'\n  end,\n}}\n"
    ));
    h.next_prompt(&full_ctx())
        .err()
        .unwrap_or_else(|| panic!("`{body}` should have failed"))
}

#[test]
fn withheld_functions_fail_clearly_with_line() {
    let cases = [
        ("io.open('/etc/passwd')", "io is not available"),
        ("io.write('x')", "io is not available"),
        ("os.execute('true')", "os.execute is not available"),
        ("os.remove('/tmp/x')", "os.remove is not available"),
        ("os.exit(1)", "os.exit is not available"),
        ("os.getenv('HOME')", "os.getenv is not available"),
        ("loadstring('return 1')()", "loadstring is not available"),
        ("load('return 1')", "load is not available"),
        ("dofile('/etc/passwd')", "dofile is not available"),
        ("loadfile('/etc/passwd')", "loadfile is not available"),
        ("getfenv(1)", "getfenv is not available"),
        ("setfenv(1, {})", "setfenv is not available"),
        ("string.dump(print)", "string.dump is not available"),
        ("debug.traceback()", "debug is not available"),
        ("package.loaded.x = 1", "package is not available"),
    ];
    for (body, want) in cases {
        let e = hook_err(body);
        assert!(matches!(e, PolicyError::Sandbox { .. }), "{body}: {e:?}");
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "test.lua:3: {want} in oneshot policies (sandboxed)"
            )),
            "{body}: {text}"
        );
        assert_eq!(e.location().as_deref(), Some("test.lua:3"), "{body}");
    }
}

#[test]
fn safe_os_and_libs_still_work() {
    let h = host(
        "return { next_prompt = function()\n\
           return string.format('%s %d %s %s', type(os.clock()), bit32.band(6, 3), utf8.char(65), math.max(1, 2))\n\
         end }",
    );
    assert_eq!(h.next_prompt(&full_ctx()).unwrap(), "number 2 A 2");
}

#[test]
fn sandbox_violation_at_load_names_file_and_line() {
    let e = load_err("local x = 1\nlocal f = io.open('/etc/passwd')\nreturn {}");
    assert!(matches!(e, PolicyError::Sandbox { .. }), "{e:?}");
    assert_eq!(e.hook(), Some(LOAD_HOOK));
    assert!(
        e.to_string().contains("test.lua:2: io is not available"),
        "{e}"
    );
}

#[test]
fn globals_are_read_only() {
    for body in [
        "string.rep = nil",
        "rawset(string, 'rep', nil)",
        "table.insert = print",
        "getmetatable('').__index = {}",
        "setmetatable(_G, {})",
    ] {
        let e = hook_err(body);
        assert!(matches!(e, PolicyError::Sandbox { .. }), "{body}: {e:?}");
        let text = e.to_string();
        // Luau's C functions (rawset, setmetatable) raise without a position.
        if !body.starts_with("rawset") && !body.starts_with("setmetatable") {
            assert!(text.contains("test.lua:3"), "{body}: {text}");
        }
    }
    // The library is intact for the next call.
    let h = host(
        "return { next_prompt = function() pcall(function() string.rep = nil end) return string.rep('a', 3) end }",
    );
    assert_eq!(h.next_prompt(&full_ctx()).unwrap(), "aaa");
}

/// The issue's attack: a hook that redefines a global function or leaves a new global behind
/// must not change a later decision. The top level may still define globals.
#[test]
fn a_hook_cannot_change_the_globals_a_later_hook_sees() {
    let h = host(
        r#"helper_prefix = "seen: "
        return {
          on_transition = function(from, to, ctx)
            tostring = function() return "done" end
          end,
          next_prompt = function(ctx)
            leftover = "done"
            return "x"
          end,
          verdict = function(output, ctx)
            if leftover or tostring(1) == "done" then return "done", "tampered" end
            return "retry", helper_prefix .. output
          end,
        }"#,
    );
    let e = h
        .on_transition(
            crate::machine::SessionState::Created,
            crate::machine::SessionState::WorkerExecuting,
            &full_ctx(),
        )
        .unwrap_err();
    assert!(matches!(e, PolicyError::Sandbox { .. }), "{e:?}");
    assert!(e.to_string().contains("test.lua:4"), "{e}");
    let e = h.next_prompt(&full_ctx()).unwrap_err();
    assert!(matches!(e, PolicyError::Sandbox { .. }), "{e:?}");
    let v = h.verdict("out", &full_ctx()).unwrap();
    assert_eq!(v.verdict, Some(crate::machine::Verdict::Retry));
    assert_eq!(v.reason.as_deref(), Some("seen: out"));
}

#[test]
fn runaway_loop_stops_near_budget() {
    for body in [
        "while true do end",
        "while true do pcall(function() while true do end end) end",
        "local co = coroutine.wrap(function() while true do end end) co()",
        "local s = string.rep('a', 200000) .. 'b' for i = 1, 1e9 do s:find('.-.-.-.-c') end",
        "local s = '' for i = 1, 1e9 do s = s .. 'xxxxxxxxxx' end",
        "for i = 1, 1e9 do local ok = pcall(error, string.rep('x', 1000000)) end",
        "local s = string.rep('a', 1000000) for i = 1, 1e9 do local r = s:gsub('a', 'bb') end",
    ] {
        let start = Instant::now();
        let e = hook_err(body);
        let took = start.elapsed();
        assert!(took < Duration::from_secs(1), "{body}: took {took:?}");
        assert!(took >= Duration::from_millis(90), "{body}: took {took:?}");
        assert!(matches!(e, PolicyError::Budget { .. }), "{body}: {e:?}");
        assert_eq!(
            e.to_string(),
            "run hook next_prompt within its 100ms budget; make it faster or raise the budget \
             (--hook-budget)"
        );
    }
}

#[test]
fn budget_applies_at_load() {
    let opts = PolicyOptions {
        hook_budget: Duration::from_millis(50),
        ..PolicyOptions::default()
    };
    let start = Instant::now();
    let e = PolicyHost::from_source("test.lua", "while true do end\nreturn {}", opts)
        .err()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(matches!(e, PolicyError::Budget { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("run the policy's top-level code within its 50ms budget"),
        "{e}"
    );
}

#[test]
fn host_works_after_budget_error() {
    let h = host(
        "return { next_prompt = function(ctx) if ctx.iteration == 1 then while true do end end return 'ok' end }",
    );
    let mut ctx = full_ctx();
    ctx.iteration = 1;
    assert!(matches!(
        h.next_prompt(&ctx),
        Err(PolicyError::Budget { .. })
    ));
    ctx.iteration = 2;
    assert_eq!(h.next_prompt(&ctx).unwrap(), "ok");
}

#[test]
fn memory_bomb_fails_cleanly_and_host_survives() {
    // A generous budget: this test is about the memory cap, not the clock.
    let opts = PolicyOptions {
        hook_budget: Duration::from_secs(20),
        ..PolicyOptions::default()
    };
    let h = PolicyHost::from_source("test.lua", 
        "return { next_prompt = function(ctx)\n\
           if ctx.iteration == 1 then local t = {} while true do t[#t + 1] = string.rep('x', 1e6) .. #t end end\n\
           return 'still alive ' .. ctx.iteration\n\
         end }",
        opts,
    )
    .unwrap();
    let mut ctx = full_ctx();
    ctx.iteration = 1;
    let start = Instant::now();
    let e = h.next_prompt(&ctx).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(matches!(e, PolicyError::Memory { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "run hook next_prompt within the memory limit (64 MiB)"
    );
    for i in 2..5 {
        ctx.iteration = i;
        assert_eq!(h.next_prompt(&ctx).unwrap(), format!("still alive {i}"));
    }
}

#[test]
fn bytecode_is_refused() {
    let e = PolicyHost::from_source(
        "evil.lua",
        "\u{6}\u{3}\0\0garbage",
        PolicyOptions::default(),
    )
    .err()
    .unwrap();
    assert!(matches!(e, PolicyError::Load { .. }), "{e:?}");
}

#[test]
fn print_does_not_escape_to_stdout() {
    let h = host(
        "print('hello from policy') return { next_prompt = function() print('x', 1, nil) return 'ok' end }",
    );
    assert_eq!(h.next_prompt(&full_ctx()).unwrap(), "ok");
}

#[test]
fn identical_string_bomb_is_stopped_by_one_cap_or_the_other() {
    // Luau interns strings, so the brief's bomb grows a table of one shared string: it is the
    // clock that stops it, not the memory cap. Either way the failure is clean.
    let h = host(
        "return { next_prompt = function() local t = {} while true do t[#t+1] = string.rep('x', 1e6) end end }",
    );
    let start = Instant::now();
    let e = h.next_prompt(&full_ctx()).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(e, PolicyError::Budget { .. } | PolicyError::Memory { .. }),
        "{e:?}"
    );
}

#[test]
fn the_watchdog_stays_quiet_when_the_interrupt_does_its_job() {
    use super::super::{OnStuck, WatchdogOptions};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let fired = Arc::new(AtomicUsize::new(0));
    let f = Arc::clone(&fired);
    let opts = PolicyOptions {
        hook_budget: Duration::from_millis(50),
        watchdog: Some(WatchdogOptions {
            after: Duration::from_millis(100),
            action: OnStuck(Arc::new(move |_| {
                f.fetch_add(1, Ordering::SeqCst);
            })),
        }),
        ..PolicyOptions::default()
    };
    let h = PolicyHost::from_source(
        "test.lua",
        "return { next_prompt = function() local s = string.rep('a', 200000) for i = 1, 1e9 do s:find('.-.-.-c') end end }",
        opts,
    )
    .unwrap();
    for _ in 0..3 {
        let e = h.next_prompt(&full_ctx()).unwrap_err();
        assert!(matches!(e, PolicyError::Budget { .. }), "{e:?}");
    }
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        fired.load(Ordering::SeqCst),
        0,
        "the interrupt stopped every call in time"
    );
}

/// How far past its budget a hook stops, for string work, allocation and error storms: prints
/// the times (measured, not asserted — the machine is noisy; docs/performance.md reports them). Run:
/// `cargo test --release --lib measure_hook_overrun -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure_hook_overrun() {
    for body in [
        "while true do end",
        "local s = string.rep('a', 200000) .. 'b' for i = 1, 1e9 do s:find('.-.-.-.-c') end",
        "local t = {} for i = 1, 1e9 do t[#t+1] = string.rep('x', 1000) end",
        "local s = '' for i = 1, 1e9 do s = s .. 'xxxxxxxxxx' end",
        "for i = 1, 1e9 do local s = string.rep('ab', 100000) local u = s:upper() end",
        "for i = 1, 1e9 do local s = string.format('%s', string.rep('a', 100000)) end",
        "error(string.rep('x', 10*1024*1024))",
        "for i = 1, 1e9 do local ok = pcall(error, string.rep('x', 1000000)) end",
        "local s = string.rep('a', 1000000) for i = 1, 1e9 do local r = s:gsub('a', 'bb') end",
        "local s = string.rep('a', 1000000) for i=1,1e9 do table.concat({s,s,s,s}) end",
        "local t = {} for i = 1, 200000 do t[i] = i end for i = 1, 1e9 do table.sort(t, function(a,b) return a > b end) end",
    ] {
        let start = Instant::now();
        let e = hook_err(body);
        let took = start.elapsed();
        eprintln!(
            "{:>8.1?} {:?} {}",
            took,
            e.kind(),
            &body[..body.len().min(60)]
        );
    }
}
