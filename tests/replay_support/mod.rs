//! Writes session logs the way the engine does (`docs/log-format.md`), asking a real policy
//! every question, so replay tests run on logs a real session would leave.
#![allow(dead_code)]

use oneshot::executor::{Evidence, StopReason};
use oneshot::machine::{Event, SessionState as S, next};
use oneshot::policy::{GuardOutcome, HookCtx, PolicyError, PolicyHost};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashSet;

/// Strings longer than this go to blob records.
const BLOB_OVER: usize = 256;

/// A session being recorded under `policy`.
pub struct Recorder<'p> {
    policy: &'p PolicyHost,
    pub records: Vec<Value>,
    pub ctx: HookCtx,
    evidence: Option<Evidence>,
    rerun: bool,
    blobs: HashSet<String>,
}

impl<'p> Recorder<'p> {
    pub fn new(policy: &'p PolicyHost, task: &str) -> Self {
        let ctx = HookCtx {
            session_id: "00000000-0000-4000-8000-000000000001".into(),
            state: Some(S::Created),
            max_iterations: policy.limits().max_iterations,
            task: task.into(),
            workdir: "/work".into(),
            ..HookCtx::default()
        };
        let mut r = Recorder {
            policy,
            records: Vec::new(),
            ctx,
            evidence: None,
            rerun: false,
            blobs: HashSet::new(),
        };
        r.records
            .push(json!({"ts": 1, "type": "session", "message": "created", "pid": 1}));
        r
    }

    pub fn state(&self) -> S {
        self.ctx.state.unwrap()
    }

    /// Runs the whole session: worker outputs and auditor outputs are consumed in turn until a
    /// terminal state, or until they run out (a session still running).
    pub fn drive(mut self, workers: &[&str], auditors: &[&str]) -> Vec<Value> {
        let (mut w, mut a) = (workers.iter(), auditors.iter());
        loop {
            match self.state() {
                S::Created => self.run(),
                S::WorkerExecuting => match w.next() {
                    Some(out) => self.worker_exits_ok(out),
                    None => break,
                },
                S::AuditPending => self.prepare_audit(),
                S::AuditorExecuting => match a.next() {
                    Some(out) => self.auditor_exits_ok(out),
                    None => break,
                },
                S::ReiterationPending => self.reiterate(),
                S::RecoveryPending => self.salvage(),
                _ => break,
            }
        }
        self.records
    }

    pub fn run(&mut self) {
        self.ctx.iteration = 1;
        self.ctx.worker_prompt = self.ctx.task.clone();
        self.transition(Event::Run, None);
    }

    pub fn worker_exits_ok(&mut self, output: &str) {
        self.ctx.worker_output = output.into();
        self.process("worker", 0);
        self.transition(Event::ExitedOk, None);
    }

    pub fn worker_times_out(&mut self, output: &str, changed: &[&str]) {
        self.ctx.worker_output = output.into();
        self.evidence = Some(Evidence {
            reason: Some(StopReason::InactivityTimeout),
            output_tail: output.into(),
            changed_files: changed.iter().map(|s| s.to_string()).collect(),
            changes_source: "snapshot".into(),
            ..Evidence::default()
        });
        self.transition(Event::Timeout, Some("inactivity_timeout".into()));
    }

    pub fn prepare_audit(&mut self) {
        match self.policy.audit_prompt(&self.ctx) {
            Ok(p) => {
                self.decision(
                    "audit_prompt",
                    json!({"ctx": self.ctx_json()}),
                    json!({"prompt": p}),
                );
                self.transition(Event::Next, None);
            }
            Err(e) => self.failed("audit_prompt", json!({"ctx": self.ctx_json()}), e),
        }
    }

    pub fn auditor_exits_ok(&mut self, output: &str) {
        self.ctx.auditor_output = output.into();
        self.process("auditor", 0);
        let input = json!({"output": output, "ctx": self.ctx_json()});
        match self.policy.verdict(output, &self.ctx) {
            Ok(d) => {
                self.decision(
                    "verdict",
                    input,
                    json!({"verdict": d.verdict, "reason": d.reason, "confidence": d.confidence}),
                );
                self.ctx.verdict = Some(d.verdict);
                self.ctx.critique = d.reason.clone();
                self.ctx.confidence = d.confidence;
                self.transition(Event::Verdict(d.verdict), d.reason);
            }
            Err(e) => self.failed("verdict", input, e),
        }
    }

    pub fn reiterate(&mut self) {
        if std::mem::take(&mut self.rerun) {
            return self.transition(Event::Next, Some("rerun after pause".into()));
        }
        if self.ctx.iteration >= self.ctx.max_iterations {
            return self.transition(Event::MaxIterations, Some("max_iterations".into()));
        }
        match self.policy.next_prompt(&self.ctx) {
            Ok(p) => {
                self.decision(
                    "next_prompt",
                    json!({"ctx": self.ctx_json()}),
                    json!({"prompt": p}),
                );
                self.ctx.iteration += 1;
                self.ctx.worker_prompt = p;
                self.transition(Event::Next, None);
            }
            Err(e) => self.failed("next_prompt", json!({"ctx": self.ctx_json()}), e),
        }
    }

    pub fn salvage(&mut self) {
        let evidence = self.evidence.clone().unwrap_or_default();
        let input = json!({"evidence": evidence, "ctx": self.ctx_json()});
        match self.policy.salvage(&evidence, &self.ctx) {
            Ok(d) => {
                self.decision(
                    "salvage",
                    input,
                    json!({"salvage": d.salvage, "reason": d.reason}),
                );
                let paused = evidence.reason.is_some_and(|r| r.is_pause());
                self.rerun = d.salvage == oneshot::machine::Salvage::Partial && paused;
                self.transition(Event::Salvaged(d.salvage), d.reason);
            }
            Err(e) => self.failed("salvage", input, e),
        }
    }

    /// The engine's `transition`: guard (not for FAILED/INTERRUPTED), commit, observer.
    pub fn transition(&mut self, event: Event, reason: Option<String>) {
        let from = self.state();
        let to = next(from, event).expect("a legal move");
        if to != S::Failed && to != S::Interrupted {
            let input = json!({"from": from, "to": to, "ctx": self.ctx_json()});
            match self.policy.guard(from, to, &self.ctx) {
                Ok(GuardOutcome::Allow) => self.decision("guard", input, json!({"allow": true})),
                Ok(GuardOutcome::Veto(why)) => {
                    self.decision("guard", input, json!({"allow": false, "reason": why}));
                    let why = format!("guard vetoed {from} -> {to}: {why}");
                    return self.commit(S::Failed, Some(why));
                }
                Err(e) => return self.failed("guard", input, e),
            }
        }
        self.commit(to, reason);
        let input = json!({"from": from, "to": to, "ctx": self.ctx_json()});
        match self.policy.on_transition(from, to, &self.ctx) {
            Ok(()) => self.decision("on_transition", input, json!({})),
            Err(e) if to.is_terminal() => self.decision("on_transition", input, error(&e)),
            Err(e) => self.failed("on_transition", input, e),
        }
    }

    fn failed(&mut self, hook: &str, input: Value, e: PolicyError) {
        self.decision(hook, input, error(&e));
        self.commit(S::Failed, Some("policy_error".into()));
    }

    fn commit(&mut self, to: S, reason: Option<String>) {
        let from = self.state();
        self.records.push(json!({
            "ts": 2, "type": "state_change", "from": from, "to": to,
            "iteration": self.ctx.iteration, "reason": reason,
            "policy_hash": self.policy.hash(), "generation": 1,
        }));
        self.ctx.state = Some(to);
        self.ctx.reason = reason;
    }

    fn process(&mut self, role: &str, code: i32) {
        self.records.push(json!({
            "ts": 3, "type": "process", "event": "exited", "role": role,
            "iteration": self.ctx.iteration, "pid": 42, "exit_code": code,
        }));
    }

    fn ctx_json(&self) -> Value {
        serde_json::to_value(&self.ctx).unwrap()
    }

    /// A decision record, long strings moved to blob records written just before it.
    pub fn decision(&mut self, hook: &str, mut input: Value, mut result: Value) {
        self.blobify(&mut input);
        self.blobify(&mut result);
        let state = if hook == "guard" {
            input["from"].clone()
        } else {
            json!(self.state())
        };
        self.records.push(json!({
            "ts": 4, "type": "decision", "hook": hook, "state": state,
            "iteration": self.ctx.iteration, "generation": 1,
            "policy_hash": self.policy.hash(), "builtin": false, "duration_us": 7,
            "input": input, "result": result,
        }));
    }

    fn blobify(&mut self, value: &mut Value) {
        match value {
            Value::String(s) if s.len() > BLOB_OVER => {
                let hash = format!("sha256:{:x}", Sha256::digest(s.as_bytes()));
                if self.blobs.insert(hash.clone()) {
                    self.records
                        .push(json!({"ts": 5, "type": "blob", "sha256": hash, "text": s}));
                }
                *value = json!({ "$blob": hash });
            }
            Value::Object(map) => map.values_mut().for_each(|v| self.blobify(v)),
            Value::Array(items) => items.iter_mut().for_each(|v| self.blobify(v)),
            _ => {}
        }
    }
}

fn error(e: &PolicyError) -> Value {
    json!({"error": e.to_string(), "error_kind": e.kind()})
}

/// A policy from Lua source.
pub fn policy(source: &str) -> PolicyHost {
    PolicyHost::from_source("test.lua", source, Default::default()).expect("test policy loads")
}
