//! Cost of one guard call, including the `HookCtx` → Lua conversion, against an empty Lua call.
//!
//! Run with `cargo bench --bench guard`. Target: p50 ≤ 1 µs for the guard call with a full
//! context. One run reports:
//!
//! * `guard, full ctx changing every call`: both 4 KiB outputs and the iteration differ on
//!   every call (the outputs at their end, so comparing them costs the full 4 KiB);
//! * `guard, full ctx unchanged`: the same context every call;
//! * `guard, changing ctx, hook reads worker_output`: as the first, but the guard reads the
//!   output, so it is built into Lua on every call (the price of reading a lazy field);
//! * `baseline: empty lua call, no ctx`: the floor.
//!
//! Criterion prints mean estimates; the medians are in
//! `$CARGO_TARGET_DIR/criterion/policy/*/new/estimates.json` (`median.point_estimate`, ns).

use criterion::{Criterion, criterion_group, criterion_main};
use oneshot::machine::{SessionState, Verdict};
use oneshot::policy::{HookCtx, PolicyHost, PolicyOptions};
use std::hint::black_box;

const POLICY: &str = r#"
return {
  guards = {
    ["AUDIT_PENDING -> AUDITOR_EXECUTING"] = function(ctx)
      if #ctx.changed_files > 100 then return false, "too many files" end
      return true
    end,
  },
}
"#;

fn full_ctx(round: usize) -> HookCtx {
    HookCtx {
        session_id: "3f1c2a9e-0000-4000-8000-000000000001".into(),
        state: Some(SessionState::AuditPending),
        iteration: round as u32,
        max_iterations: 5,
        task: "fix the failing test in the parser module".into(),
        worker_prompt: "fix the failing test in the parser module".into(),
        exit_code: Some(0),
        reason: Some("exit_code".into()),
        elapsed: 42.5,
        worker_output: format!("{}{round}", "w".repeat(4096)),
        auditor_output: format!("{}{round}", "a".repeat(4096)),
        verdict: Some(Verdict::Retry),
        critique: Some("the test still fails".into()),
        confidence: Some(0.7),
        open_criteria_streak: 0,
        changed_files: (0..20).map(|i| format!("src/file_{i}.rs")).collect(),
        workdir: "/tmp/work".into(),
        structured: None,
        diff: None,
        checks: Vec::new(),
        messages: Vec::new(),
        egress: Vec::new(),
    }
}

const READS_OUTPUT: &str = r#"
return {
  guards = {
    ["AUDIT_PENDING -> AUDITOR_EXECUTING"] = function(ctx)
      if ctx.worker_output:find("FATAL", 1, true) then return false, "fatal" end
      return true
    end,
  },
}
"#;

fn bench(c: &mut Criterion) {
    let host = PolicyHost::from_source("bench.lua", POLICY, PolicyOptions::default())
        .expect("bench policy loads");
    let (from, to) = (SessionState::AuditPending, SessionState::AuditorExecuting);
    let mut group = c.benchmark_group("policy");
    // The target case: new outputs and a new iteration on every call.
    let ctxs: Vec<HookCtx> = (0..64).map(full_ctx).collect();
    let mut i = 0;
    group.bench_function("guard, full ctx changing every call", |b| {
        b.iter(|| {
            i = (i + 1) % ctxs.len();
            host.guard(from, to, black_box(&ctxs[i])).unwrap()
        })
    });
    let ctx = full_ctx(0);
    group.bench_function("guard, full ctx unchanged", |b| {
        b.iter(|| {
            host.guard(black_box(from), black_box(to), black_box(&ctx))
                .unwrap()
        })
    });
    let reader = PolicyHost::from_source("bench.lua", READS_OUTPUT, PolicyOptions::default())
        .expect("bench policy loads");
    group.bench_function("guard, changing ctx, hook reads worker_output", |b| {
        b.iter(|| {
            i = (i + 1) % ctxs.len();
            reader.guard(from, to, black_box(&ctxs[i])).unwrap()
        })
    });
    // The floor: mlua calling an empty Luau function with no arguments, no ctx, no budget.
    let lua = mlua::Lua::new();
    let empty: mlua::Function = lua.load("return function() end").eval().unwrap();
    group.bench_function("baseline: empty lua call, no ctx", |b| {
        b.iter(|| empty.call::<()>(()).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
