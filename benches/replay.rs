//! Replay throughput: 1,000,000 recorded decisions through a policy with a `verdict` hook and
//! one guard, against a baseline that walks the same decisions without calling Lua.
//!
//! Run with `cargo bench --bench replay`. Target: ≥ 1,000,000 decisions/s. The synthetic
//! session loops worker → auditor → retry 200,000 times; each iteration records four guards
//! (one of them the policy's) and a verdict on a short output, with the context shared between
//! the decisions of an iteration as `load_decisions` shares equal contexts.

use oneshot::machine::{SessionState as S, Verdict};
use oneshot::policy::{GuardOutcome, HookCtx, PolicyHost, PolicyOptions, VerdictDecision};
use oneshot::replay::{
    DecisionInput, DecisionResult, Hook, Recorded, RecordedDecision, RecordedTransition, replay,
};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

const POLICY: &str = r#"
return {
  limits = { max_iterations = 1000000 },
  verdict = function(output, ctx)
    if output:find("DONE", 1, true) then return "done" end
    return "retry", "not yet"
  end,
  guards = {
    ["AUDIT_PENDING -> AUDITOR_EXECUTING"] = function(ctx)
      if ctx.iteration > 999999 then return false, "too many" end
      return true
    end,
  },
}
"#;

const DECISIONS: usize = 1_000_000;

fn synthetic() -> Recorded {
    let mut r = Recorded::default();
    let mut record = 0;
    let iterations = DECISIONS / 5;
    let push_t = |r: &mut Recorded, record: &mut usize, from, to, iteration| {
        *record += 1;
        r.transitions.push(RecordedTransition {
            record: *record,
            from,
            to,
            iteration,
            reason: None,
            detail: None,
            policy_hash: None,
            generation: None,
        });
    };
    let first = Arc::new(HookCtx::default());
    r.decisions.push(decision(
        &mut record,
        0,
        Hook::Guard,
        S::Created,
        1,
        DecisionInput::Guard {
            from: S::Created,
            to: S::WorkerExecuting,
            ctx: first,
        },
        DecisionResult::Guard(GuardOutcome::Allow),
    ));
    push_t(&mut r, &mut record, S::Created, S::WorkerExecuting, 1);
    for it in 1..=iterations as u32 {
        let last = it as usize == iterations;
        let ctx = Arc::new(HookCtx {
            session_id: "3f1c2a9e-0000-4000-8000-000000000001".into(),
            iteration: it,
            max_iterations: 1_000_000,
            task: "fix the failing test".into(),
            worker_output: "edited src/parser.rs".into(),
            auditor_output: "VERDICT: RETRY".into(),
            ..HookCtx::default()
        });
        let after = if last {
            S::Completed
        } else {
            S::ReiterationPending
        };
        let steps: [(S, S); 4] = [
            (S::WorkerExecuting, S::AuditPending),
            (S::AuditPending, S::AuditorExecuting),
            (S::AuditorExecuting, after),
            (S::ReiterationPending, S::WorkerExecuting),
        ];
        for (k, (from, to)) in steps.into_iter().enumerate() {
            if k == 3 && last {
                break;
            }
            if k == 2 {
                let (output, verdict) = if last {
                    ("VERDICT: DONE", Verdict::Done)
                } else {
                    ("VERDICT: RETRY", Verdict::Retry)
                };
                r.decisions.push(decision(
                    &mut record,
                    r.decisions.len(),
                    Hook::Verdict,
                    from,
                    it,
                    DecisionInput::Verdict {
                        output: output.into(),
                        ctx: Arc::clone(&ctx),
                    },
                    DecisionResult::Verdict(VerdictDecision {
                        verdict,
                        reason: None,
                        confidence: None,
                    }),
                ));
            }
            r.decisions.push(decision(
                &mut record,
                r.decisions.len(),
                Hook::Guard,
                from,
                it,
                DecisionInput::Guard {
                    from,
                    to,
                    ctx: Arc::clone(&ctx),
                },
                DecisionResult::Guard(GuardOutcome::Allow),
            ));
            let next_it = if k == 3 { it + 1 } else { it };
            push_t(&mut r, &mut record, from, to, next_it);
        }
    }
    r.final_state = r.transitions.last().map(|t| t.to);
    r
}

fn decision(
    record: &mut usize,
    index: usize,
    hook: Hook,
    state: S,
    iteration: u32,
    input: DecisionInput,
    result: DecisionResult,
) -> RecordedDecision {
    *record += 1;
    RecordedDecision {
        index,
        record: *record,
        hook,
        state,
        iteration,
        generation: 1,
        policy_hash: "sha256:0123456789abcdef".into(),
        builtin: false,
        input,
        result,
        missing_blobs: Vec::new(),
    }
}

fn main() {
    let recorded = synthetic();
    let n = recorded.decisions.len();
    let policy = PolicyHost::from_source("bench.lua", POLICY, PolicyOptions::default())
        .expect("bench policy loads");
    println!(
        "replay: {n} recorded decisions, {} transitions",
        recorded.transitions.len()
    );
    for run in 1..=3 {
        let start = Instant::now();
        let mut hooks = 0usize;
        for d in black_box(&recorded.decisions) {
            hooks += black_box(d.input.ctx()).iteration as usize + d.hook as usize;
        }
        black_box(hooks);
        let base = start.elapsed();
        let start = Instant::now();
        let report = replay(black_box(&recorded), &policy);
        let took = start.elapsed();
        assert!(
            report.differences.is_empty() && report.errors.is_empty(),
            "{:?}",
            report.divergence
        );
        assert_eq!(report.simulated_path, report.recorded_path);
        let rate = |d: std::time::Duration| n as f64 / d.as_secs_f64();
        println!(
            "run {run}: replay {:>10.0} decisions/s ({:.3} s) | baseline without lua {:>12.0} decisions/s ({:.4} s)",
            rate(took),
            took.as_secs_f64(),
            rate(base),
            base.as_secs_f64()
        );
    }
}
