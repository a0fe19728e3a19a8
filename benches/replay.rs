//! Replay throughput: a long recorded session (the decision core itself records it, as the
//! engine would) replayed through a policy with a `verdict` hook and one guard, beside the same
//! replay through a policy with the same limits and no hooks (the same core and records, the
//! built-in decisions, no Lua calls).
//!
//! Run with `cargo bench --bench replay`. Replay re-asks every recorded decision *and* runs
//! the whole session again through the decision core, which takes the re-asked answers while it
//! asks the recorded questions, so a decision costs one hook call plus its share of a step.

use oneshot::pipeline::Redactor;
use oneshot::policy::{PolicyHost, PolicyOptions};
use oneshot::replay::{Recording, ReplayOptions, replay_recording};
use oneshot::session::{
    Effect, Event, ExitStatus, NewSession, PolicyJudge, PolicyRef, ProcessIdentity, Session,
};
use oneshot::store::Log;
use oneshot::store::record::blob::Blobber;
use std::collections::VecDeque;
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

const ITERATIONS: u32 = 10_000;

/// Drives a session through `ITERATIONS` worker → auditor rounds and returns its log lines.
fn record(policy: &PolicyHost) -> Vec<serde_json::Value> {
    let redactor = Redactor::new(&[], Vec::new()).expect("redactor");
    let mut session = Session::new(
        NewSession {
            id: "3f1c2a9e-0000-4000-8000-000000000001".into(),
            task: "fix the failing test".into(),
            workdir: "/work".into(),
            worker_cmd: "sh w.sh".into(),
            auditor_cmd: "sh a.sh".into(),
        },
        PolicyRef {
            path: None,
            hash: policy.hash().into(),
            generation: 1,
            budget: None,
        },
        policy.limits().max_iterations,
        1,
    );
    let mut blobber = Blobber::default();
    let no_secrets = oneshot::redact::Redactor::new(&[], Vec::new()).unwrap();
    let mut lines = Vec::new();
    let mut queue = VecDeque::from([Event::Start]);
    let (mut now, mut audits) = (1u64, 0u32);
    while let Some(event) = queue.pop_front() {
        now += 1;
        let mut judge = PolicyJudge::new(policy, 1, &redactor);
        for effect in session.step(now, event, &mut judge) {
            match effect {
                Effect::Record(r) => lines.extend(blobber.encode(&r, &no_secrets).unwrap()),
                Effect::Spawn(s) => {
                    let tail = match s.role {
                        oneshot::session::Role::Worker => "edited src/parser.rs".to_string(),
                        oneshot::session::Role::Auditor => {
                            audits += 1;
                            if audits == ITERATIONS {
                                "VERDICT: DONE"
                            } else {
                                "VERDICT: RETRY not yet"
                            }
                            .to_string()
                        }
                    };
                    queue.push_back(Event::Spawned(ProcessIdentity {
                        pid: 42,
                        pgid: 42,
                        start_time: None,
                    }));
                    queue.push_back(Event::Exited {
                        exit: ExitStatus {
                            code: Some(0),
                            signal: None,
                        },
                        stdout: tail.clone(),
                        tail,
                    });
                }
                Effect::Inspect { reason, exit } => {
                    queue.push_back(Event::Inspected(oneshot::session::Evidence {
                        reason,
                        exit_code: exit.code,
                        ..Default::default()
                    }))
                }
                _ => {}
            }
        }
    }
    lines
}

fn main() {
    let policy = PolicyHost::from_source("bench.lua", POLICY, PolicyOptions::default())
        .expect("bench policy loads");
    let builtin = PolicyHost::from_source(
        "limits.lua",
        "return { limits = { max_iterations = 1000000 } }",
        PolicyOptions::default(),
    )
    .expect("baseline policy loads");
    let start = Instant::now();
    let log = Log::decode(record(&policy));
    let rec = Recording::from_log(&log).expect("the log replays");
    let n = rec.decisions.len();
    println!(
        "replay: {ITERATIONS} iterations, {n} recorded decisions, {} transitions (recorded and decoded in {:.2} s)",
        rec.transitions.len(),
        start.elapsed().as_secs_f64()
    );
    let rate = |d: std::time::Duration| n as f64 / d.as_secs_f64();
    for run in 1..=3 {
        let start = Instant::now();
        let report = replay_recording(&rec, &policy, ReplayOptions::default());
        let took = start.elapsed();
        assert!(!report.differs(), "{:?}", report.divergence);
        let start = Instant::now();
        let base = replay_recording(&rec, &builtin, ReplayOptions::default());
        let base_took = start.elapsed();
        assert_eq!(base.simulated_path.len(), report.simulated_path.len());
        println!(
            "run {run}: replay through the Lua policy {:>9.0} decisions/s ({:.3} s) | without hooks {:>9.0} decisions/s ({:.3} s)",
            rate(took),
            took.as_secs_f64(),
            rate(base_took),
            base_took.as_secs_f64()
        );
    }
}
