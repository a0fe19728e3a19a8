//! Every hook call goes through here: the policy decides, the engine times the call and appends
//! a `decision` record (docs/log-format.md) — the input of `oneshot policy replay`.

use super::ctx::now_ms;
use super::{Engine, EngineError};
use crate::executor::Evidence;
use crate::machine::SessionState;
use crate::policy::{
    GuardOutcome, HookCtx, PolicyError, SalvageDecision, VerdictDecision, sha256_hex,
};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::Instant;

/// Strings longer than this are written once as a `blob` record and referenced by hash, so a
/// 64 KiB output tail seen by eight guards costs one copy, not eight.
const BLOB_MIN: usize = 256;

/// A hook's answer, or the policy error it produced; the outer `Result` is the engine's own
/// failure to record it.
pub(super) type Decided<T> = Result<Result<T, PolicyError>, EngineError>;

#[derive(Serialize)]
struct DecisionRecord<'a> {
    ts: u64,
    #[serde(rename = "type")]
    kind: &'static str,
    hook: &'static str,
    state: SessionState,
    iteration: u32,
    generation: u32,
    policy_hash: &'a str,
    builtin: bool,
    duration_us: u64,
    input: Value,
    result: Value,
}

impl Engine {
    /// The auditor's verdict from its output.
    pub(super) fn decide_verdict(&mut self, output: &str) -> Decided<VerdictDecision> {
        let ctx = self.ctx();
        let start = Instant::now();
        let r = self.policy().verdict(output, &ctx);
        let result = r
            .as_ref()
            .map(|d| json!({"verdict": d.verdict, "reason": d.reason, "confidence": d.confidence}));
        let input = json!({"output": output, "ctx": ctx});
        self.record("verdict", "verdict", start, input, result)?;
        Ok(r)
    }

    /// What the evidence of a stopped worker is worth.
    pub(super) fn decide_salvage(&mut self, evidence: &Evidence) -> Decided<SalvageDecision> {
        let ctx = self.ctx();
        let start = Instant::now();
        let r = self.policy().salvage(evidence, &ctx);
        let result = r
            .as_ref()
            .map(|d| json!({"salvage": d.salvage, "reason": d.reason}));
        let input = json!({"evidence": evidence, "ctx": ctx});
        self.record("salvage", "salvage", start, input, result)?;
        Ok(r)
    }

    /// Whether `from -> to` may happen.
    pub(super) fn decide_guard(
        &mut self,
        from: SessionState,
        to: SessionState,
    ) -> Decided<GuardOutcome> {
        let ctx = self.ctx();
        let start = Instant::now();
        let r = self.policy().guard(from, to, &ctx);
        let result = r.as_ref().map(|g| match g {
            GuardOutcome::Allow => json!({"allow": true}),
            GuardOutcome::Veto(why) => json!({"allow": false, "reason": why}),
        });
        let input = json!({"from": from, "to": to, "ctx": ctx});
        let name = format!("guards[{from} -> {to}]");
        self.record("guard", &name, start, input, result)?;
        Ok(r)
    }

    /// The worker's prompt for the next iteration.
    pub(super) fn decide_next_prompt(&mut self) -> Decided<String> {
        self.decide_prompt("next_prompt", |p, ctx| p.next_prompt(ctx))
    }

    /// The auditor's prompt.
    pub(super) fn decide_audit_prompt(&mut self) -> Decided<String> {
        self.decide_prompt("audit_prompt", |p, ctx| p.audit_prompt(ctx))
    }

    fn decide_prompt(
        &mut self,
        hook: &'static str,
        call: impl Fn(&crate::policy::PolicyHost, &HookCtx) -> Result<String, PolicyError>,
    ) -> Decided<String> {
        let ctx = self.ctx();
        let start = Instant::now();
        let r = call(self.policy(), &ctx);
        let result = r.as_ref().map(|p| json!({"prompt": p}));
        self.record(hook, hook, start, json!({"ctx": ctx}), result)?;
        Ok(r)
    }

    /// Tells the observer hook about a transition that happened.
    pub(super) fn observe_transition(
        &mut self,
        from: SessionState,
        to: SessionState,
    ) -> Decided<()> {
        let ctx = self.ctx();
        let start = Instant::now();
        let r = self.policy().on_transition(from, to, &ctx);
        let result = r.as_ref().map(|()| json!({}));
        let input = json!({"from": from, "to": to, "ctx": ctx});
        self.record("on_transition", "on_transition", start, input, result)?;
        Ok(r)
    }

    /// Appends the decision (and any blobs it references) to the log.
    fn record(
        &mut self,
        hook: &'static str,
        key: &str,
        start: Instant,
        input: Value,
        result: Result<Value, &PolicyError>,
    ) -> Result<(), EngineError> {
        let duration_us = start.elapsed().as_micros() as u64;
        let builtin = !self.policy().hooks().iter().any(|h| h == key);
        let result = match result {
            Ok(v) => v,
            Err(e) => json!({"error": e.to_string(), "error_kind": e.kind()}),
        };
        let input = self.blobify(input)?;
        let result = self.blobify(result)?;
        let record = DecisionRecord {
            ts: now_ms(),
            kind: "decision",
            hook,
            state: self.file.state,
            iteration: self.file.iteration_count,
            generation: self.slot.generation(),
            policy_hash: self.slot.current().hash(),
            builtin,
            duration_us,
            input,
            result,
        };
        self.log
            .append(&record)
            .map_err(|source| self.log_error(source))?;
        // What the hook said through oneshot.log(), attributed to it.
        for (level, message) in self.policy().take_logs() {
            let message = self.redactor.redact(&message).into_owned();
            let rec = json!({"ts": now_ms(), "type": "policy_log", "hook": key, "level": level, "message": message});
            self.log
                .append(&rec)
                .map_err(|source| self.log_error(source))?;
        }
        Ok(())
    }

    /// Redacts every string and moves the long ones into `blob` records.
    fn blobify(&mut self, v: Value) -> Result<Value, EngineError> {
        Ok(match v {
            Value::String(s) => {
                let s = self.redactor.redact(&s).into_owned();
                if s.len() <= BLOB_MIN {
                    Value::String(s)
                } else {
                    let hash = sha256_hex(s.as_bytes());
                    if self.blobs_written.insert(hash.clone()) {
                        let rec =
                            json!({"ts": now_ms(), "type": "blob", "sha256": hash, "text": s});
                        self.log
                            .append(&rec)
                            .map_err(|source| self.log_error(source))?;
                    }
                    json!({"$blob": hash})
                }
            }
            Value::Array(a) => Value::Array(
                a.into_iter()
                    .map(|x| self.blobify(x))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(m) => {
                let mut out = serde_json::Map::with_capacity(m.len());
                for (k, x) in m {
                    out.insert(k, self.blobify(x)?);
                }
                Value::Object(out)
            }
            other => other,
        })
    }
}
