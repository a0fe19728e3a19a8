//! `decision` records: one policy hook call, what it was given and what it answered.

use crate::machine::{Salvage, SessionState, Verdict};
use crate::policy::{GuardOutcome, HookCtx, SalvageDecision, VerdictDecision};
use crate::process::Evidence;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt;
use std::sync::Arc;

/// The policy hook a decision record names (`"hook"` in the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Hook {
    /// `verdict(output, ctx)`: the auditor's judgement.
    Verdict,
    /// `salvage(evidence, ctx)`: what a stopped worker left.
    Salvage,
    /// `guards["FROM -> TO"](ctx)`: may the transition happen.
    Guard,
    /// `next_prompt(ctx)`: the worker's prompt for the next iteration.
    NextPrompt,
    /// `audit_prompt(ctx)`: the auditor's prompt.
    AuditPrompt,
    /// `on_transition(from, to, ctx)`: the observer.
    OnTransition,
    /// `permit(tool, input, ctx, role)`: may the agent use this tool.
    Permit,
    /// `checks` (a list, or `checks(ctx)`): what the audit runs before its auditor.
    Checks,
    /// `egress(ctx, req)`: may the agent open this connection.
    Egress,
}

impl Hook {
    /// Every hook, in the order `docs/log-format.md` lists them.
    pub const ALL: [Hook; 9] = [
        Hook::Verdict,
        Hook::Salvage,
        Hook::Guard,
        Hook::NextPrompt,
        Hook::AuditPrompt,
        Hook::OnTransition,
        Hook::Permit,
        Hook::Checks,
        Hook::Egress,
    ];

    /// The name used in the log (`"next_prompt"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Hook::Verdict => "verdict",
            Hook::Salvage => "salvage",
            Hook::Guard => "guard",
            Hook::NextPrompt => "next_prompt",
            Hook::AuditPrompt => "audit_prompt",
            Hook::OnTransition => "on_transition",
            Hook::Permit => "permit",
            Hook::Checks => "checks",
            Hook::Egress => "egress",
        }
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a hook was given. The ctx is shared so equal recorded contexts are held once.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DecisionInput {
    /// `verdict`: the auditor's output tail as the hook saw it.
    Verdict {
        /// The output.
        output: String,
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `salvage`: the recovery evidence.
    Salvage {
        /// The evidence.
        evidence: Evidence,
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `guard`: the transition asked about.
    Guard {
        /// The state the transition leaves.
        from: SessionState,
        /// The state it enters.
        to: SessionState,
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `next_prompt`.
    NextPrompt {
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `audit_prompt`.
    AuditPrompt {
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `on_transition`: the transition that happened.
    OnTransition {
        /// The state left.
        from: SessionState,
        /// The state entered.
        to: SessionState,
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `permit`: the tool request.
    Permit {
        /// The role whose agent asks.
        role: crate::process::Role,
        /// The tool.
        tool: String,
        /// The tool's input.
        input: Value,
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `checks`.
    Checks {
        /// The context.
        ctx: Arc<HookCtx>,
    },
    /// `egress`: the connection asked for.
    Egress {
        /// The host.
        host: String,
        /// The port.
        port: u16,
        /// The agent asking.
        agent: String,
        /// The role it runs as.
        role: crate::process::Role,
        /// The context.
        ctx: Arc<HookCtx>,
    },
}

impl DecisionInput {
    /// The context the hook saw.
    pub fn ctx(&self) -> &Arc<HookCtx> {
        match self {
            DecisionInput::Verdict { ctx, .. }
            | DecisionInput::Salvage { ctx, .. }
            | DecisionInput::Guard { ctx, .. }
            | DecisionInput::NextPrompt { ctx }
            | DecisionInput::AuditPrompt { ctx }
            | DecisionInput::Checks { ctx }
            | DecisionInput::OnTransition { ctx, .. }
            | DecisionInput::Permit { ctx, .. }
            | DecisionInput::Egress { ctx, .. } => ctx,
        }
    }

    /// The hook this input belongs to.
    pub fn hook(&self) -> Hook {
        match self {
            DecisionInput::Verdict { .. } => Hook::Verdict,
            DecisionInput::Salvage { .. } => Hook::Salvage,
            DecisionInput::Guard { .. } => Hook::Guard,
            DecisionInput::NextPrompt { .. } => Hook::NextPrompt,
            DecisionInput::AuditPrompt { .. } => Hook::AuditPrompt,
            DecisionInput::OnTransition { .. } => Hook::OnTransition,
            DecisionInput::Permit { .. } => Hook::Permit,
            DecisionInput::Checks { .. } => Hook::Checks,
            DecisionInput::Egress { .. } => Hook::Egress,
        }
    }

    /// The `input` object as written.
    pub fn to_value(&self) -> Value {
        let ctx = |c: &HookCtx| serde_json::to_value(c).unwrap_or(Value::Null);
        match self {
            DecisionInput::Verdict { output, ctx: c } => json!({"output": output, "ctx": ctx(c)}),
            DecisionInput::Salvage { evidence, ctx: c } => {
                json!({"evidence": evidence, "ctx": ctx(c)})
            }
            DecisionInput::Guard { from, to, ctx: c }
            | DecisionInput::OnTransition { from, to, ctx: c } => {
                json!({"from": from, "to": to, "ctx": ctx(c)})
            }
            DecisionInput::NextPrompt { ctx: c }
            | DecisionInput::AuditPrompt { ctx: c }
            | DecisionInput::Checks { ctx: c } => {
                json!({"ctx": ctx(c)})
            }
            DecisionInput::Permit {
                role,
                tool,
                input,
                ctx: c,
            } => json!({"role": role, "tool": tool, "input": input, "ctx": ctx(c)}),
            DecisionInput::Egress {
                host,
                port,
                agent,
                role,
                ctx: c,
            } => json!({"host": host, "port": port, "agent": agent, "role": role, "ctx": ctx(c)}),
        }
    }

    /// Reads the `input` object of a `hook` decision (blob references already resolved).
    pub fn from_value(hook: Hook, input: &Value) -> Result<DecisionInput, String> {
        let ctx = || -> Result<Arc<HookCtx>, String> {
            let v = input.get("ctx").ok_or("input.ctx is missing")?;
            HookCtx::deserialize(v)
                .map(Arc::new)
                .map_err(|e| format!("input.ctx: {e}"))
        };
        DecisionInput::with_ctx(hook, input, ctx()?)
    }

    /// [`DecisionInput::from_value`] with an already decoded context (replay shares equal
    /// contexts).
    pub fn with_ctx(hook: Hook, input: &Value, ctx: Arc<HookCtx>) -> Result<DecisionInput, String> {
        fn field<T: serde::de::DeserializeOwned>(input: &Value, name: &str) -> Result<T, String> {
            let v = input
                .get(name)
                .ok_or_else(|| format!("input.{name} is missing"))?;
            T::deserialize(v).map_err(|e| format!("input.{name}: {e}"))
        }
        Ok(match hook {
            Hook::Verdict => DecisionInput::Verdict {
                output: field(input, "output")?,
                ctx,
            },
            Hook::Salvage => DecisionInput::Salvage {
                evidence: field(input, "evidence")?,
                ctx,
            },
            Hook::Guard => DecisionInput::Guard {
                from: field(input, "from")?,
                to: field(input, "to")?,
                ctx,
            },
            Hook::NextPrompt => DecisionInput::NextPrompt { ctx },
            Hook::AuditPrompt => DecisionInput::AuditPrompt { ctx },
            Hook::Checks => DecisionInput::Checks { ctx },
            Hook::OnTransition => DecisionInput::OnTransition {
                from: field(input, "from")?,
                to: field(input, "to")?,
                ctx,
            },
            Hook::Permit => DecisionInput::Permit {
                role: field(input, "role")?,
                tool: field(input, "tool")?,
                input: input.get("input").cloned().unwrap_or(Value::Null),
                ctx,
            },
            Hook::Egress => DecisionInput::Egress {
                host: field(input, "host")?,
                port: field(input, "port")?,
                agent: field(input, "agent")?,
                role: field(input, "role")?,
                ctx,
            },
        })
    }
}

/// What a hook answered (or the built-in default standing in for it).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DecisionResult {
    /// `verdict`.
    Verdict(VerdictDecision),
    /// `salvage`.
    Salvage(SalvageDecision),
    /// `guard`.
    Guard(GuardOutcome),
    /// `next_prompt` or `audit_prompt`.
    Prompt(String),
    /// `on_transition` returned (its values are ignored).
    Observed,
    /// `permit`.
    Permit(crate::policy::PermitDecision),
    /// `checks`: the list the policy gave (the session's own are added after).
    Checks(Vec<crate::check::Check>),
    /// `egress` (`None`: the hook returned nil, leaving it to the default refusal).
    Egress(Option<crate::policy::EgressDecision>),
    /// The hook failed.
    Error {
        /// The message, with `file:line` where Lua knew it.
        message: String,
        /// `budget`, `memory`, `runtime`, `sandbox`, `bad_return`, …
        kind: String,
    },
}

impl DecisionResult {
    /// The hook failed.
    pub fn is_error(&self) -> bool {
        matches!(self, DecisionResult::Error { .. })
    }

    /// The `result` object as written.
    pub fn to_value(&self) -> Value {
        match self {
            DecisionResult::Verdict(d) => {
                let verdict = crate::policy::verdict_word(d.verdict);
                json!({"verdict": verdict, "reason": d.reason, "confidence": d.confidence})
            }
            DecisionResult::Salvage(d) => json!({"salvage": d.salvage, "reason": d.reason}),
            DecisionResult::Guard(GuardOutcome::Allow) => json!({"allow": true}),
            DecisionResult::Guard(GuardOutcome::Veto(why)) => {
                json!({"allow": false, "reason": why})
            }
            DecisionResult::Prompt(p) => json!({"prompt": p}),
            DecisionResult::Observed => json!({}),
            DecisionResult::Permit(p) => json!({"allow": p.allow, "reason": p.reason}),
            DecisionResult::Checks(c) => json!({ "checks": c }),
            DecisionResult::Egress(Some(d)) => json!({"allow": d.allow, "reason": d.reason}),
            DecisionResult::Egress(None) => json!({}),
            DecisionResult::Error { message, kind } => {
                json!({"error": message, "error_kind": kind})
            }
        }
    }

    /// Reads the `result` object of a `hook` decision (blob references already resolved).
    pub fn from_value(hook: Hook, result: &Value) -> Result<DecisionResult, String> {
        if !result.is_object() {
            return Err("result must be an object".into());
        }
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
                #[serde(untagged)]
                enum Word {
                    Verdict(Verdict),
                    /// `"none"`: the answer held no verdict.
                    None(NoVerdict),
                }
                #[derive(Deserialize)]
                #[serde(rename_all = "lowercase")]
                enum NoVerdict {
                    None,
                }
                #[derive(Deserialize)]
                struct R {
                    verdict: Word,
                    reason: Option<String>,
                    confidence: Option<f64>,
                }
                let r = R::deserialize(result).map_err(bad)?;
                DecisionResult::Verdict(VerdictDecision {
                    verdict: match r.verdict {
                        Word::Verdict(v) => Some(v),
                        Word::None(NoVerdict::None) => None,
                    },
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
                let r = R::deserialize(result).map_err(bad)?;
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
                let r = R::deserialize(result).map_err(bad)?;
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
                DecisionResult::Prompt(R::deserialize(result).map_err(bad)?.prompt)
            }
            Hook::OnTransition => DecisionResult::Observed,
            Hook::Checks => {
                #[derive(Deserialize)]
                struct R {
                    checks: Vec<crate::check::Check>,
                }
                DecisionResult::Checks(R::deserialize(result).map_err(bad)?.checks)
            }
            Hook::Permit => {
                #[derive(Deserialize)]
                struct R {
                    allow: bool,
                    reason: Option<String>,
                }
                let r = R::deserialize(result).map_err(bad)?;
                DecisionResult::Permit(crate::policy::PermitDecision {
                    allow: r.allow,
                    reason: r.reason,
                })
            }
            Hook::Egress => {
                #[derive(Deserialize)]
                struct R {
                    allow: Option<bool>,
                    reason: Option<String>,
                }
                let r = R::deserialize(result).map_err(bad)?;
                DecisionResult::Egress(r.allow.map(|allow| crate::policy::EgressDecision {
                    allow,
                    reason: r.reason,
                }))
            }
        })
    }
}

/// `decision`: one hook call, with what the hook was given and what it answered, typed. On
/// disk `input` and `result` are the objects [`DecisionInput::to_value`] and
/// [`DecisionResult::to_value`] write; reading decodes them by `hook`.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRecord {
    /// When.
    pub ts: u64,
    /// The hook asked.
    pub hook: Hook,
    /// The hook's key in the policy when it is more than the hook's name: `guards[A -> B]`.
    pub key: Option<String>,
    /// The session state when it was asked (for a guard: the `from` state).
    pub state: SessionState,
    /// The worker iteration.
    pub iteration: u32,
    /// The policy generation that answered.
    pub generation: u32,
    /// The content hash of the policy that answered.
    pub policy_hash: String,
    /// The policy has no such hook: the built-in behaviour decided.
    pub builtin: bool,
    /// How long the call took.
    pub duration_us: u64,
    /// What the hook was given.
    pub input: DecisionInput,
    /// What it answered.
    pub result: DecisionResult,
}

/// The layout on disk.
#[derive(Serialize, Deserialize)]
struct Wire {
    ts: u64,
    hook: Hook,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    state: SessionState,
    iteration: u32,
    generation: u32,
    policy_hash: String,
    builtin: bool,
    duration_us: u64,
    input: Value,
    result: Value,
}

impl Serialize for DecisionRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            ts: self.ts,
            hook: self.hook,
            key: self.key.clone(),
            state: self.state,
            iteration: self.iteration,
            generation: self.generation,
            policy_hash: self.policy_hash.clone(),
            builtin: self.builtin,
            duration_us: self.duration_us,
            input: self.input.to_value(),
            result: self.result.to_value(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for DecisionRecord {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let w = Wire::deserialize(d)?;
        let input = DecisionInput::from_value(w.hook, &w.input).map_err(D::Error::custom)?;
        let result = DecisionResult::from_value(w.hook, &w.result).map_err(D::Error::custom)?;
        Ok(DecisionRecord {
            ts: w.ts,
            hook: w.hook,
            key: w.key,
            state: w.state,
            iteration: w.iteration,
            generation: w.generation,
            policy_hash: w.policy_hash,
            builtin: w.builtin,
            duration_us: w.duration_us,
            input,
            result,
        })
    }
}
