//! `decision`, `blob` and `state_change` records → [`Recorded`].

use super::error::ReplayError;
use super::record::{
    DecisionInput, DecisionResult, Hook, Recorded, RecordedDecision, RecordedTransition,
};
use crate::executor::Evidence;
use crate::machine::{Salvage, SessionState, Verdict};
use crate::policy::{GuardOutcome, HookCtx, SalvageDecision, VerdictDecision};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// Reads the decisions and transitions out of a log's records (as [`crate::store::read_log`]
/// returns them).
///
/// `$blob` references are replaced by the text of their `blob` record wherever in the log that
/// record is (a resumed session may write it again, or after a torn write, earlier); a decision
/// whose blob is missing is kept with [`RecordedDecision::missing_blobs`] set. Records of other
/// types are skipped. Equal recorded contexts are decoded once and shared.
pub fn load_decisions(records: &[Value]) -> Result<Recorded, ReplayError> {
    let blobs = collect_blobs(records)?;
    let mut loader = Loader {
        blobs,
        ctxs: HashMap::new(),
    };
    let mut recorded = Recorded::default();
    for (i, value) in records.iter().enumerate() {
        let record = i + 1;
        match value.get("type").and_then(Value::as_str) {
            Some("decision") => {
                let index = recorded.decisions.len();
                let d = loader.decision(record, index, value)?;
                recorded.decisions.push(d);
            }
            Some("state_change") => recorded.transitions.push(transition(record, value)?),
            _ => {}
        }
    }
    recorded.final_state = recorded.transitions.last().map(|t| t.to);
    Ok(recorded)
}

fn collect_blobs(records: &[Value]) -> Result<HashMap<&str, &str>, ReplayError> {
    let mut blobs = HashMap::new();
    for (i, value) in records.iter().enumerate() {
        if value.get("type").and_then(Value::as_str) != Some("blob") {
            continue;
        }
        let field = |name: &str| {
            value
                .get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| ReplayError::Blob {
                    record: i + 1,
                    message: format!("`{name}` must be a string"),
                })
        };
        blobs.insert(field("sha256")?, field("text")?);
    }
    Ok(blobs)
}

fn transition(record: usize, value: &Value) -> Result<RecordedTransition, ReplayError> {
    #[derive(Deserialize)]
    struct Raw {
        from: SessionState,
        to: SessionState,
        #[serde(default)]
        iteration: u32,
        reason: Option<String>,
        detail: Option<String>,
        policy_hash: Option<String>,
        generation: Option<u32>,
    }
    let raw = Raw::deserialize(value).map_err(|e| ReplayError::Transition {
        record,
        message: e.to_string(),
    })?;
    Ok(RecordedTransition {
        record,
        from: raw.from,
        to: raw.to,
        iteration: raw.iteration,
        reason: raw.reason,
        detail: raw.detail,
        policy_hash: raw.policy_hash,
        generation: raw.generation,
    })
}

struct Loader<'a> {
    blobs: HashMap<&'a str, &'a str>,
    /// Decoded contexts by their JSON text *before* blob resolution: blob references are
    /// content hashes, so equal text means an equal context, and the key stays small.
    /// The blobs each one lacks ride along, so a reused context still marks its decision.
    ctxs: HashMap<String, (Arc<HookCtx>, Vec<String>)>,
}

impl Loader<'_> {
    fn decision(
        &mut self,
        record: usize,
        index: usize,
        value: &Value,
    ) -> Result<RecordedDecision, ReplayError> {
        let hook_name = value.get("hook").and_then(Value::as_str);
        let fail = |message: String| ReplayError::Decision {
            record,
            hook: hook_name.unwrap_or("?").to_string(),
            message,
        };
        let hook = hook_name
            .and_then(Hook::from_name)
            .ok_or_else(|| fail("`hook` must name one of the six hooks".into()))?;
        let state: SessionState = field(value, "state").map_err(&fail)?;
        let iteration: u32 = field(value, "iteration").map_err(&fail)?;
        let generation = value.get("generation").and_then(Value::as_u64).unwrap_or(0) as u32;
        let policy_hash = value
            .get("policy_hash")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let builtin = value.get("builtin").and_then(Value::as_bool) == Some(true);
        let mut missing = Vec::new();
        let input = value
            .get("input")
            .and_then(Value::as_object)
            .ok_or_else(|| fail("`input` must be an object".into()))?;
        let input = self.input(hook, input, &mut missing).map_err(&fail)?;
        let mut result = value
            .get("result")
            .cloned()
            .filter(Value::is_object)
            .ok_or_else(|| fail("`result` must be an object".into()))?;
        self.resolve(&mut result, &mut missing);
        let result = decode_result(hook, result).map_err(&fail)?;
        Ok(RecordedDecision {
            index,
            record,
            hook,
            state,
            iteration,
            generation,
            policy_hash,
            builtin,
            input,
            result,
            missing_blobs: missing,
        })
    }

    fn input(
        &mut self,
        hook: Hook,
        input: &Map<String, Value>,
        missing: &mut Vec<String>,
    ) -> Result<DecisionInput, String> {
        let ctx = self.ctx(input, missing)?;
        let state = |name: &str| -> Result<SessionState, String> {
            let v = input
                .get(name)
                .ok_or_else(|| format!("input.{name} is missing"))?;
            SessionState::deserialize(v).map_err(|e| format!("input.{name}: {e}"))
        };
        Ok(match hook {
            Hook::Verdict => DecisionInput::Verdict {
                output: self.owned(input, "output", missing)?,
                ctx,
            },
            Hook::Salvage => DecisionInput::Salvage {
                evidence: self.owned::<Evidence>(input, "evidence", missing)?,
                ctx,
            },
            Hook::Guard => DecisionInput::Guard {
                from: state("from")?,
                to: state("to")?,
                ctx,
            },
            Hook::NextPrompt => DecisionInput::NextPrompt { ctx },
            Hook::AuditPrompt => DecisionInput::AuditPrompt { ctx },
            Hook::OnTransition => DecisionInput::OnTransition {
                from: state("from")?,
                to: state("to")?,
                ctx,
            },
        })
    }

    fn ctx(
        &mut self,
        input: &Map<String, Value>,
        missing: &mut Vec<String>,
    ) -> Result<Arc<HookCtx>, String> {
        let raw = input.get("ctx").ok_or("input.ctx is missing")?;
        let key = raw.to_string();
        if let Some((ctx, lacking)) = self.ctxs.get(&key) {
            missing.extend(lacking.iter().cloned());
            return Ok(Arc::clone(ctx));
        }
        let mut value = raw.clone();
        let mut lacking = Vec::new();
        self.resolve(&mut value, &mut lacking);
        let ctx: HookCtx = serde_json::from_value(value).map_err(|e| format!("input.ctx: {e}"))?;
        let ctx = Arc::new(ctx);
        missing.extend(lacking.iter().cloned());
        self.ctxs.insert(key, (Arc::clone(&ctx), lacking));
        Ok(ctx)
    }

    fn owned<T: DeserializeOwned>(
        &self,
        input: &Map<String, Value>,
        name: &str,
        missing: &mut Vec<String>,
    ) -> Result<T, String> {
        let mut value = input
            .get(name)
            .cloned()
            .ok_or_else(|| format!("input.{name} is missing"))?;
        self.resolve(&mut value, missing);
        serde_json::from_value(value).map_err(|e| format!("input.{name}: {e}"))
    }

    /// Replaces every `{"$blob": HASH}` in `value` by the blob's text (or an empty string,
    /// noting the hash in `missing`).
    fn resolve(&self, value: &mut Value, missing: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(hash) = blob_ref(map) {
                    *value = match self.blobs.get(hash) {
                        Some(text) => Value::String((*text).to_string()),
                        None => {
                            if !missing.iter().any(|m| m == hash) {
                                missing.push(hash.to_string());
                            }
                            Value::String(String::new())
                        }
                    };
                    return;
                }
                map.values_mut().for_each(|v| self.resolve(v, missing));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.resolve(v, missing)),
            _ => {}
        }
    }
}

fn blob_ref(map: &Map<String, Value>) -> Option<&str> {
    if map.len() != 1 {
        return None;
    }
    map.get("$blob")?.as_str()
}

fn field<T: DeserializeOwned>(value: &Value, name: &str) -> Result<T, String> {
    let v = value
        .get(name)
        .ok_or_else(|| format!("`{name}` is missing"))?;
    T::deserialize(v).map_err(|e| format!("`{name}`: {e}"))
}

fn decode_result(hook: Hook, result: Value) -> Result<DecisionResult, String> {
    if let Some(message) = result.get("error") {
        let message = message
            .as_str()
            .ok_or("result.error must be a string")?
            .to_string();
        let kind = result
            .get("error_kind")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        return Ok(DecisionResult::Error { message, kind });
    }
    let bad = |e: serde_json::Error| format!("result: {e}");
    Ok(match hook {
        Hook::Verdict => {
            #[derive(Deserialize)]
            struct R {
                verdict: Verdict,
                reason: Option<String>,
                confidence: Option<f64>,
            }
            let r: R = serde_json::from_value(result).map_err(bad)?;
            DecisionResult::Verdict(VerdictDecision {
                verdict: r.verdict,
                reason: r.reason,
                confidence: r.confidence,
            })
        }
        Hook::Salvage => {
            #[derive(Deserialize)]
            struct R {
                salvage: Salvage,
                reason: Option<String>,
            }
            let r: R = serde_json::from_value(result).map_err(bad)?;
            DecisionResult::Salvage(SalvageDecision {
                salvage: r.salvage,
                reason: r.reason,
            })
        }
        Hook::Guard => {
            #[derive(Deserialize)]
            struct R {
                allow: bool,
                reason: Option<String>,
            }
            let r: R = serde_json::from_value(result).map_err(bad)?;
            DecisionResult::Guard(if r.allow {
                GuardOutcome::Allow
            } else {
                GuardOutcome::Veto(r.reason.unwrap_or_default())
            })
        }
        Hook::NextPrompt | Hook::AuditPrompt => {
            #[derive(Deserialize)]
            struct R {
                prompt: String,
            }
            let r: R = serde_json::from_value(result).map_err(bad)?;
            DecisionResult::Prompt(r.prompt)
        }
        Hook::OnTransition => DecisionResult::Observed,
    })
}
