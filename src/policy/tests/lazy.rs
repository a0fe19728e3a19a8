//! The large `ctx` fields are built only when read: same values, same caps, same read-only
//! table, fresh after every change.

use super::super::{GuardOutcome, LAZY_FIELDS, MAX_LUA_STRING, PolicyError, PolicyOptions};
use super::{full_ctx, host};
use crate::machine::SessionState as S;
use crate::policy::PolicyHost;
use std::time::Duration;

/// A policy whose `next_prompt` returns `expr` (evaluated with `ctx` in scope).
fn prompt_host(expr: &str) -> PolicyHost {
    host(&format!(
        "return {{ next_prompt = function(ctx) return {expr} end }}"
    ))
}

#[test]
fn each_lazy_field_reads_its_value() {
    let mut ctx = full_ctx();
    ctx.task = "the task".into();
    ctx.worker_prompt = "the prompt".into();
    ctx.worker_output = "worker said".into();
    ctx.auditor_output = "auditor said".into();
    ctx.critique = Some("needs work".into());
    let cases = [
        ("ctx.task", "the task"),
        ("ctx.worker_prompt", "the prompt"),
        ("ctx.worker_output", "worker said"),
        ("ctx.auditor_output", "auditor said"),
        ("ctx.critique", "needs work"),
        (
            "#ctx.changed_files .. ' ' .. ctx.changed_files[1] .. ' ' .. ctx.changed_files[20]",
            "20 src/file_0.rs src/file_19.rs",
        ),
        // Reading twice in one call gives the same (cached) value.
        (
            "tostring(ctx.changed_files == ctx.changed_files and ctx.worker_output == ctx.worker_output)",
            "true",
        ),
        (
            "#ctx.messages .. ' ' .. ctx.messages[1].actor .. ': ' .. ctx.messages[1].text .. ' ' \
             .. ctx.messages[1].status .. ' ' .. ctx.messages[1].taken_iteration",
            "1 ann: the fixture lives in tests/data taken 2",
        ),
        // Missing keys still read as nil, and the eager fields are unaffected.
        (
            "tostring(ctx.no_such_field) .. tostring(ctx[1]) .. ctx.iteration .. ctx.state",
            "nilnil2AUDIT_PENDING",
        ),
    ];
    for (expr, want) in cases {
        // A fresh host per case: the field is built on this very read, not found cached.
        assert_eq!(prompt_host(expr).next_prompt(&ctx).unwrap(), want, "{expr}");
    }
    // A None critique reads as nil.
    ctx.critique = None;
    let h = prompt_host("tostring(ctx.critique)");
    assert_eq!(h.next_prompt(&ctx).unwrap(), "nil");
}

#[test]
fn lazy_fields_are_fresh_after_every_change() {
    let h = prompt_host(
        "table.concat({ ctx.iteration, ctx.task, ctx.worker_prompt, ctx.worker_output, \
         ctx.auditor_output, tostring(ctx.critique), table.concat(ctx.changed_files, ',') }, '|')",
    );
    let mut ctx = full_ctx();
    ctx.changed_files = vec!["a.rs".into()];
    for round in 0..4 {
        ctx.iteration = round;
        // Round 2 changes nothing: the cached values must still be right.
        if round != 2 {
            ctx.task = format!("task {round}");
            ctx.worker_prompt = format!("prompt {round}");
            ctx.worker_output = format!("out {round}");
            ctx.auditor_output = format!("audit {round}");
            ctx.critique = (round % 2 == 0).then(|| format!("crit {round}"));
            ctx.changed_files.push(format!("{round}.rs"));
        }
        let r = if round == 2 { 1 } else { round };
        let crit = if r % 2 == 0 {
            format!("crit {r}")
        } else {
            "nil".into()
        };
        let files = ctx.changed_files.join(",");
        assert_eq!(
            h.next_prompt(&ctx).unwrap(),
            format!("{round}|task {r}|prompt {r}|out {r}|audit {r}|{crit}|{files}")
        );
    }
}

#[test]
fn change_seen_when_the_field_was_not_read_in_between() {
    // Call 1 reads the output, call 2 does not (but it changed), call 3 reads it again.
    let h = prompt_host("ctx.iteration == 2 and 'skip' or ctx.worker_output");
    let mut ctx = full_ctx();
    ctx.iteration = 1;
    ctx.worker_output = "first".into();
    assert_eq!(h.next_prompt(&ctx).unwrap(), "first");
    ctx.iteration = 2;
    ctx.worker_output = "second".into();
    assert_eq!(h.next_prompt(&ctx).unwrap(), "skip");
    ctx.iteration = 3;
    ctx.worker_output = "third".into();
    assert_eq!(h.next_prompt(&ctx).unwrap(), "third");
    // Back to a value seen before.
    ctx.worker_output = "first".into();
    assert_eq!(h.next_prompt(&ctx).unwrap(), "first");
}

#[test]
fn lazy_fields_keep_the_string_cap() {
    let h = prompt_host(
        "#ctx.worker_output .. ' ' .. ctx.worker_output:sub(-3) .. ' ' .. #ctx.task .. ' ' .. ctx.task:sub(1, 3)",
    );
    let mut ctx = full_ctx();
    ctx.worker_output = format!("{}end", "w".repeat(MAX_LUA_STRING * 2));
    ctx.task = format!("abc{}", "t".repeat(MAX_LUA_STRING * 2));
    assert_eq!(
        h.next_prompt(&ctx).unwrap(),
        format!("{MAX_LUA_STRING} end {MAX_LUA_STRING} abc")
    );
}

#[test]
fn ctx_stays_read_only_with_lazy_fields() {
    let writes = [
        // Not yet built, and already built.
        "ctx.worker_output = 'x'",
        "local _ = ctx.worker_output; ctx.worker_output = 'x'",
        "ctx.changed_files = {}",
        "ctx.new_field = 1",
        "rawset(ctx, 'task', 'x')",
        "setmetatable(ctx, nil)",
        "table.insert(ctx.changed_files, 'x')",
    ];
    for body in writes {
        let h = host(&format!(
            "return {{ next_prompt = function(ctx) {body} return 'wrote' end }}"
        ));
        let e = h.next_prompt(&full_ctx()).unwrap_err();
        assert!(matches!(e, PolicyError::Sandbox { .. }), "{body}: {e:?}");
    }
    // The metatable is hidden, so `__index` cannot be swapped out.
    let h = prompt_host("tostring(getmetatable(ctx))");
    assert_eq!(h.next_prompt(&full_ctx()).unwrap(), "false");
}

#[test]
fn iteration_sees_every_field() {
    let mut ctx = full_ctx();
    ctx.reason = None;
    // 22 fields, minus `reason`, `structured` and `diff` (None).
    let want = "auditor_output,changed_files,checks,confidence,critique,egress,elapsed,exit_code,iteration,\
                max_iterations,messages,open_criteria_streak,session_id,state,task,verdict,workdir,\
                worker_output,worker_prompt";
    for lp in ["for k in pairs(ctx) do", "for k in ctx do"] {
        let h = prompt_host(&format!(
            "(function() local keys = {{}} {lp} keys[#keys + 1] = k end \
             table.sort(keys) return table.concat(keys, ',') end)()"
        ));
        assert_eq!(h.next_prompt(&ctx).unwrap(), want, "{lp}");
        // Again, with everything already cached, and after a change.
        assert_eq!(h.next_prompt(&ctx).unwrap(), want, "{lp}");
        ctx.worker_output = "changed".into();
        assert_eq!(h.next_prompt(&ctx).unwrap(), want, "{lp}");
    }
    // Values through pairs are the real ones.
    let h = prompt_host(
        "(function() local n = 0 for k, v in pairs(ctx) do if k == 'worker_output' then return v end end end)()",
    );
    ctx.worker_output = "via pairs".into();
    assert_eq!(h.next_prompt(&ctx).unwrap(), "via pairs");
    // pairs on other tables is unchanged.
    let h = prompt_host(
        "(function() local n = 0 for _ in pairs({1, 2, x = 3}) do n += 1 end return tostring(n) end)()",
    );
    assert_eq!(h.next_prompt(&ctx).unwrap(), "3");
    assert_eq!(LAZY_FIELDS.len(), 11);
}

#[test]
fn guard_reading_a_lazy_field() {
    let h = host(
        "return { guards = { ['AUDIT_PENDING -> AUDITOR_EXECUTING'] = function(ctx)\n\
           if ctx.worker_output:find('TODO') then return false, 'left a TODO' end\n\
           return true\n\
         end } }",
    );
    let mut ctx = full_ctx();
    let (from, to) = (S::AuditPending, S::AuditorExecuting);
    assert_eq!(h.guard(from, to, &ctx).unwrap(), GuardOutcome::Allow);
    ctx.worker_output = "done, TODO: tests".into();
    assert_eq!(
        h.guard(from, to, &ctx).unwrap(),
        GuardOutcome::Veto("left a TODO".into())
    );
    ctx.worker_output = "done".into();
    assert_eq!(h.guard(from, to, &ctx).unwrap(), GuardOutcome::Allow);
}

#[test]
fn building_a_lazy_field_counts_against_the_memory_limit() {
    let opts = PolicyOptions {
        hook_budget: Duration::from_secs(20),
        memory_limit: 8 * 1024 * 1024,
        ..PolicyOptions::default()
    };
    // Fill the state to within 64 KiB of its cap, then read a 256 KiB output.
    let h = PolicyHost::from_source(
        "test.lua",
        "return { next_prompt = function(ctx)\n\
           if ctx.iteration == 1 then\n\
             local t = {}\n\
             for _, size in ipairs({1e6, 1e5, 1e4}) do\n\
               while pcall(function() t[#t + 1] = string.rep(tostring(#t), size) end) do end\n\
             end\n\
             return tostring(#ctx.worker_output)\n\
           end\n\
           return 'alive ' .. #ctx.worker_output\n\
         end }",
        opts,
    )
    .unwrap();
    let mut ctx = full_ctx();
    ctx.iteration = 1;
    ctx.worker_output = "w".repeat(MAX_LUA_STRING);
    let e = h.next_prompt(&ctx).unwrap_err();
    assert!(matches!(e, PolicyError::Memory { .. }), "{e:?}");
    ctx.iteration = 2;
    assert_eq!(
        h.next_prompt(&ctx).unwrap(),
        format!("alive {MAX_LUA_STRING}")
    );
}
