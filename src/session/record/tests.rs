//! Every record kind round-trips through [`Record`]; `docs/log-format.md` is checked against
//! the type. (Through the log's writer and reader: `store/log/tests.rs`.)

use super::*;
use crate::machine::{Salvage, SessionState, Verdict};
use crate::policy::{GuardOutcome, HookCtx, SalvageDecision, VerdictDecision};
use crate::process::{Evidence, ProcessIdentity, StopReason};
use crate::session::Reason;
use serde_json::json;
use std::sync::Arc;

fn ctx() -> Arc<HookCtx> {
    Arc::new(HookCtx {
        session_id: "3f1c2a9e-5b7d-4e21-9a0c-1d2e3f4a5b6c".into(),
        state: Some(SessionState::AuditorExecuting),
        iteration: 1,
        max_iterations: 5,
        task: "fix the failing test".into(),
        worker_prompt: "fix the failing test".into(),
        exit_code: Some(0),
        reason: None,
        elapsed: 12.5,
        worker_output: "edited src/parser.rs".into(),
        auditor_output: "VERDICT: RETRY the tests fail".into(),
        verdict: None,
        critique: None,
        confidence: None,
        open_criteria_streak: 0,
        changed_files: vec!["src/parser.rs".into()],
        workdir: "/work/app".into(),
        structured: None,
        diff: None,
        checks: Vec::new(),
        messages: Vec::new(),
        egress: Vec::new(),
    })
}

fn decision(hook: Hook, input: DecisionInput, result: DecisionResult) -> Record {
    Record::Decision(DecisionRecord {
        ts: 1_700_000_000_300,
        hook,
        key: (hook == Hook::Guard).then(|| "guards[AUDIT_PENDING -> AUDITOR_EXECUTING]".into()),
        state: SessionState::AuditorExecuting,
        iteration: 1,
        generation: 1,
        policy_hash: "sha256:0123456789abcdef".into(),
        builtin: false,
        duration_us: 42,
        input,
        result,
    })
}

/// One record of every kind (and every process event and decision shape), as the engine
/// writes them.
pub(crate) fn samples() -> Vec<Record> {
    let ts = 1_700_000_000_123;
    let process = |event| {
        Record::Process(ProcessRecord {
            ts,
            role: crate::process::Role::Worker,
            iteration: 1,
            event,
        })
    };
    vec![
        Record::Session(SessionRecord {
            ts,
            pid: Some(4100),
            policy_hash: "sha256:0123456789abcdef".into(),
            event: SessionEvent::Created {
                session_id: "3f1c2a9e-5b7d-4e21-9a0c-1d2e3f4a5b6c".into(),
                task: "fix the failing test".into(),
                workdir: "/work/app".into(),
                worker_cmd: "sh fix.sh".into(),
                auditor_cmd: "sh check.sh".into(),
                limits: Default::default(),
            },
        }),
        Record::Session(SessionRecord {
            ts,
            pid: Some(4200),
            policy_hash: "sha256:0123456789abcdef".into(),
            event: SessionEvent::Resumed,
        }),
        Record::StateChange(StateChange {
            ts,
            from: SessionState::AuditorExecuting,
            to: SessionState::ReiterationPending,
            iteration: 1,
            reason: Some(Reason::Verdict {
                verdict: Verdict::Retry,
                reason: Some("the tests fail".into()),
            }),
            policy_hash: "sha256:0123456789abcdef".into(),
            generation: 1,
        }),
        process(ProcessEvent::Started {
            process: ProcessIdentity {
                pid: 4242,
                pgid: 4242,
                start_time: Some(987654),
            },
            prompt: "fix the failing test".into(),
        }),
        process(ProcessEvent::SpawnFailed {
            error: "worker command 'claude' not found on PATH".into(),
        }),
        process(ProcessEvent::Stopping {
            reason: StopReason::InactivityTimeout,
        }),
        process(ProcessEvent::Killed),
        process(ProcessEvent::Exited {
            exit_code: None,
            signal: Some(15),
            tail: "half done".into(),
            stdout: None,
        }),
        process(ProcessEvent::Fenced {
            outcome: "stopped the process group 4242 left running by the previous oneshot".into(),
        }),
        Record::Evidence(EvidenceRecord {
            ts,
            iteration: 1,
            evidence: Evidence {
                reason: Some(StopReason::InactivityTimeout),
                exit_code: None,
                signal: Some(15),
                output_tail: "half done".into(),
                changed_files: vec!["src/parser.rs".into()],
                changes_source: "git".into(),
                transcript: None,
            },
        }),
        Record::Interrupt(InterruptRecord { ts, force: false }),
        decision(
            Hook::Verdict,
            DecisionInput::Verdict {
                output: "VERDICT: RETRY the tests fail".into(),
                ctx: ctx(),
            },
            DecisionResult::Verdict(VerdictDecision {
                verdict: Some(Verdict::Retry),
                reason: Some("the tests fail".into()),
                confidence: Some(0.4),
            }),
        ),
        decision(
            Hook::Salvage,
            DecisionInput::Salvage {
                evidence: Evidence {
                    reason: Some(StopReason::ExitCode),
                    exit_code: Some(1),
                    ..Evidence::default()
                },
                ctx: ctx(),
            },
            DecisionResult::Salvage(SalvageDecision {
                salvage: Salvage::Partial,
                reason: Some("1 file(s) changed".into()),
            }),
        ),
        decision(
            Hook::Guard,
            DecisionInput::Guard {
                from: SessionState::AuditPending,
                to: SessionState::AuditorExecuting,
                ctx: ctx(),
            },
            DecisionResult::Guard(GuardOutcome::Veto("no audits on Sundays".into())),
        ),
        decision(
            Hook::NextPrompt,
            DecisionInput::NextPrompt { ctx: ctx() },
            DecisionResult::Prompt("fix the failing test\n\nCRITIQUE: the tests fail".into()),
        ),
        decision(
            Hook::AuditPrompt,
            DecisionInput::AuditPrompt { ctx: ctx() },
            DecisionResult::Error {
                message: "strict.lua:12: attempt to index a nil value".into(),
                kind: "runtime".into(),
            },
        ),
        decision(
            Hook::OnTransition,
            DecisionInput::OnTransition {
                from: SessionState::AuditorExecuting,
                to: SessionState::ReiterationPending,
                ctx: ctx(),
            },
            DecisionResult::Observed,
        ),
        decision(
            Hook::Egress,
            DecisionInput::Egress {
                host: "paste.example".into(),
                port: 443,
                agent: "claude".into(),
                role: crate::process::Role::Worker,
                ctx: ctx(),
            },
            DecisionResult::Egress(Some(crate::policy::EgressDecision {
                allow: false,
                reason: Some("no pastebins".into()),
            })),
        ),
        decision(
            Hook::Egress,
            DecisionInput::Egress {
                host: "other.example".into(),
                port: 80,
                agent: "codex".into(),
                role: crate::process::Role::Auditor,
                ctx: ctx(),
            },
            DecisionResult::Egress(None),
        ),
        Record::PolicyLog(PolicyLog {
            ts,
            hook: "verdict".into(),
            level: "info".into(),
            message: "saw 3 failing tests".into(),
        }),
        Record::Blob(Blob {
            ts,
            sha256: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
            text: "a long output tail…".into(),
        }),
        Record::Warning(Message {
            ts,
            message: "on_transition failed after CREATED -> WORKER_EXECUTING: p.lua:1: boom"
                .into(),
        }),
        Record::Note(Message {
            ts,
            message: "the policy changed since this session last ran; decisions from now on use the new one".into(),
        }),
        Record::PolicyReload(PolicyReload {
            ts,
            generation: 2,
            policy_hash: "sha256:fedcba9876543210".into(),
            files: vec!["/abs/strict.lua".into()],
        }),
        Record::PolicyReloadFailed(PolicyReloadFailed {
            ts,
            message: "strict.lua:12: unknown key max_iteratons in limits".into(),
            generation: 1,
            files: vec!["/abs/strict.lua".into()],
        }),
        Record::PolicyUntrusted(PolicyUntrusted {
            ts,
            file: "/work/app/policy.lua".into(),
            hash: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".into(),
            message: "run `oneshot policy trust /work/app/policy.lua` to activate it".into(),
        }),
        Record::Egress(EgressRefusal {
            ts,
            host: "evil.example".into(),
            port: 443,
            agent: "claude".into(),
            role: crate::process::Role::Worker,
            rule: "not on the policy's allowlist".into(),
            address: None,
            hint: allow_hint("evil.example"),
        }),
        Record::Egress(EgressRefusal {
            ts,
            host: "metadata.internal".into(),
            port: 80,
            agent: "codex".into(),
            role: crate::process::Role::Auditor,
            rule: "resolves to a link-local address".into(),
            address: Some("169.254.169.254".into()),
            hint: allow_hint("metadata.internal"),
        }),
        Record::Activity(Activity {
            ts,
            role: crate::process::Role::Worker,
            iteration: 1,
            executor: "command".into(),
            stream: crate::pipeline::Stream::Stdout,
            partial: false,
            data: json!({"type": "assistant"}),
        }),
    ]
}

#[test]
fn every_kind_round_trips_and_is_snapshotted() {
    let mut lines = Vec::new();
    for record in samples() {
        let json = serde_json::to_string(&record).unwrap();
        let back: Record = serde_json::from_str(&json).unwrap();
        assert_eq!(back, record, "{json}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&json).unwrap()["type"],
            record.kind()
        );
        lines.push(json);
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn every_kind_has_a_sample() {
    let kinds: std::collections::BTreeSet<&str> = samples().iter().map(Record::kind).collect();
    for kind in KINDS {
        assert!(kinds.contains(kind), "no sample of `{kind}`");
    }
}

#[test]
fn redaction_applies_to_every_string_before_blobbing() {
    let record = Record::Warning(Message {
        ts: 1,
        message: "token hunter2hunter2 leaked".into(),
    });
    let redactor = crate::redact::Redactor::new(&[], vec!["hunter2hunter2".into()]).unwrap();
    let lines = blob::Blobber::default().encode(&record, &redactor).unwrap();
    assert_eq!(lines[0]["message"], "token [REDACTED] leaked");
}

#[test]
fn an_unknown_type_is_kept_as_unknown_and_unknown_fields_are_ignored() {
    let r: Record = serde_json::from_str(r#"{"ts":1,"type":"from_the_future","x":1}"#).unwrap();
    assert_eq!(r, Record::Unknown);
    let r: Record =
        serde_json::from_str(r#"{"ts":1,"type":"warning","message":"m","new_field":true}"#)
            .unwrap();
    assert_eq!(r.kind(), "warning");
}

/// Every `type` the log can hold, in the order `docs/log-format.md` documents them.
const KINDS: [&str; 15] = [
    "session",
    "state_change",
    "process",
    "evidence",
    "interrupt",
    "decision",
    "blob",
    "activity",
    "warning",
    "note",
    "policy_reload",
    "policy_reload_failed",
    "policy_untrusted",
    "policy_log",
    "egress",
];

/// `docs/log-format.md` is checked against the type: every kind has a section; every JSON
/// example line in it reads as a [`Record`] of a known kind with nothing left unknown; and
/// every field the type writes for a kind is named in that kind's section.
#[test]
fn the_log_format_reference_matches_the_type() {
    let doc = include_str!("../../../docs/log-format.md");
    let mut sections: std::collections::BTreeMap<&str, String> = Default::default();
    let mut current: Option<&str> = None;
    for line in doc.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            current = KINDS
                .iter()
                .copied()
                .find(|k| heading.split('`').nth(1) == Some(*k));
        }
        if let Some(k) = current {
            let s = sections.entry(k).or_default();
            s.push_str(line);
            s.push('\n');
        }
    }
    for kind in KINDS {
        let section = sections
            .get(kind)
            .unwrap_or_else(|| panic!("docs/log-format.md has no `## \\`{kind}\\`` section"));
        let examples: Vec<&str> = section
            .lines()
            .filter(|l| l.starts_with('{') && l.contains("\"type\""))
            .collect();
        assert!(
            !examples.is_empty(),
            "the `{kind}` section has no example line"
        );
        for example in examples {
            let value: serde_json::Value = serde_json::from_str(example)
                .unwrap_or_else(|e| panic!("`{kind}` example is not JSON ({e}): {example}"));
            let record: Record = serde_json::from_value(value.clone()).unwrap_or_else(|e| {
                panic!("`{kind}` example does not read as a record ({e}): {example}")
            });
            assert_eq!(record.kind(), kind, "{example}");
            // What the type writes back is what the example says (no field lost or invented).
            assert_eq!(serde_json::to_value(&record).unwrap(), value, "{example}");
        }
    }
    for sample in samples() {
        let section = &sections[sample.kind()];
        let value = serde_json::to_value(&sample).unwrap();
        for field in value.as_object().unwrap().keys() {
            assert!(
                section.contains(&format!("`{field}`"))
                    || section.contains(&format!("\"{field}\"")),
                "docs/log-format.md does not mention `{field}` of `{}` records",
                sample.kind()
            );
        }
    }
}
