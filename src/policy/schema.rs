//! Validation of the table a policy file returns: known keys, right types, real transitions.
//!
//! Strict on purpose (STYLE.md, "strict tables"): a typo such as `max_iteratons` must fail the
//! load and name its line, not silently fall back to a default the user thinks they changed.

use super::failmode::FailModes;
use super::limits::Limits;
use super::lua_ctx::type_name;
use crate::machine::{SessionState, edges};
use mlua::{Function, Table, Value};

/// Every top-level key a policy table may have.
pub const TOP_LEVEL_KEYS: [&str; 19] = [
    "limits",
    "verdict",
    "salvage",
    "guards",
    "next_prompt",
    "audit_prompt",
    "checks",
    "on_transition",
    "on_notify",
    "permit",
    "network",
    "egress",
    "env",
    "continue_conversation",
    "redact",
    "approve",
    "resolver",
    "on_error",
    "tests",
];

/// A schema violation, before it is given a file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaError {
    /// The lowercase message.
    pub message: String,
    /// Text to look for in the source to find the offending line.
    pub needle: Option<String>,
}

impl SchemaError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        SchemaError {
            message: message.into(),
            needle: None,
        }
    }

    /// An error about `key` (a dotted name like `limits.grace_period`; its last part is what
    /// appears in the source).
    pub(crate) fn keyed(key: &str, message: impl Into<String>) -> Self {
        let last = key.rsplit('.').next().unwrap_or(key);
        SchemaError {
            message: message.into(),
            needle: Some(last.to_string()),
        }
    }

    pub(crate) fn unknown_key(key: &str, within: &str, suggestion: Option<&str>) -> Self {
        let hint = suggestion
            .map(|s| format!("; did you mean {s}?"))
            .unwrap_or_default();
        SchemaError::keyed(key, format!("unknown key `{key}` in {within}{hint}"))
    }
}

/// One `guards["FROM -> TO"]` entry.
pub(crate) struct Guard {
    /// `guards[FROM -> TO]`, the hook name used in errors and `hooks()`.
    pub name: String,
    /// The Lua function.
    pub func: Function,
}

/// The validated contents of a policy table.
#[derive(Default)]
pub(crate) struct Parsed {
    pub limits: Limits,
    pub redact: Vec<String>,
    pub verdict: Option<Function>,
    pub salvage: Option<Function>,
    pub next_prompt: Option<Function>,
    pub audit_prompt: Option<Function>,
    pub on_transition: Option<Function>,
    /// `on_notify(ctx)`: before a `[notify]` event is sent.
    pub on_notify: Option<Function>,
    pub approve: Option<Function>,
    pub permit: Option<Function>,
    /// `network`: the egress proxy's allow and deny lists.
    pub network: Option<crate::sandbox::egress::NetworkRules>,
    /// `egress(ctx, req)`: connections the lists leave open.
    pub egress: Option<Function>,
    /// `env`: what of oneshot's environment agents get.
    pub env: Option<crate::sandbox::env::EnvRules>,
    /// `resolver`: who `job land` asks to resolve a rebase's conflicts.
    pub resolver: Option<String>,
    /// `checks`: a list, or a hook returning one.
    pub checks: Option<super::checks::PolicyChecks>,
    /// `continue_conversation`, when the policy set it (the default is true).
    pub continue_conversation: Option<bool>,
    /// Indexed by `from * 10 + to` so a guard lookup is an array index, not a hash.
    pub guards: Vec<Option<Guard>>,
    /// The policy set `limits` (for [`super::PolicyHost::hooks`]).
    pub has_limits: bool,
    /// The policy set `redact`.
    pub has_redact: bool,
    /// Failure modes, with `on_error` applied.
    pub fail_modes: FailModes,
    /// The policy set `on_error`.
    pub has_on_error: bool,
    /// The policy's own `tests` table (run by `policy test`, never by a session).
    pub tests: Option<Table>,
}

/// Index into [`Parsed::guards`].
pub(crate) fn guard_slot(from: SessionState, to: SessionState) -> usize {
    from as usize * SessionState::ALL.len() + to as usize
}

/// Checks every key of the policy table and pulls out the hooks.
pub(crate) fn parse(table: &Table) -> Result<Parsed, SchemaError> {
    let mut parsed = Parsed::default();
    parsed
        .guards
        .resize_with(SessionState::ALL.len() * SessionState::ALL.len(), || None);
    for pair in table.pairs::<Value, Value>() {
        let (key, value) = pair.map_err(|e| SchemaError::new(e.to_string()))?;
        let Value::String(key) = key else {
            return Err(SchemaError::new(format!(
                "the policy table has a {} key; top-level keys must be names like `verdict`",
                type_name(&key)
            )));
        };
        let key = key.to_string_lossy();
        match key.as_str() {
            "limits" => {
                parsed.limits = Limits::from_table(&table_of(&key, value)?)?;
                parsed.has_limits = true;
            }
            "redact" => {
                parsed.redact = redact(&table_of(&key, value)?)?;
                parsed.has_redact = true;
            }
            "guards" => guards(&table_of(&key, value)?, &mut parsed.guards)?,
            "verdict" => parsed.verdict = Some(function(&key, value)?),
            "salvage" => parsed.salvage = Some(function(&key, value)?),
            "next_prompt" => parsed.next_prompt = Some(function(&key, value)?),
            "audit_prompt" => parsed.audit_prompt = Some(function(&key, value)?),
            "on_transition" => parsed.on_transition = Some(function(&key, value)?),
            "on_notify" => parsed.on_notify = Some(function(&key, value)?),
            "approve" => parsed.approve = Some(function(&key, value)?),
            "permit" => parsed.permit = Some(function(&key, value)?),
            "egress" => parsed.egress = Some(function(&key, value)?),
            "network" => {
                parsed.network = Some(super::network::network(&table_of(&key, value)?)?);
            }
            "env" => parsed.env = Some(super::network::env(&table_of(&key, value)?)?),
            "checks" => parsed.checks = Some(super::checks::parse(value)?),
            "resolver" => parsed.resolver = Some(resolver(value)?),
            "continue_conversation" => {
                parsed.continue_conversation = Some(boolean(&key, value)?);
            }
            "on_error" => {
                parsed.fail_modes = FailModes::from_table(&table_of(&key, value)?)?;
                parsed.has_on_error = true;
            }
            "tests" => parsed.tests = Some(table_of(&key, value)?),
            other => {
                return Err(SchemaError::unknown_key(
                    other,
                    "the policy table",
                    suggest(other, &TOP_LEVEL_KEYS),
                ));
            }
        }
    }
    Ok(parsed)
}

fn table_of(key: &str, value: Value) -> Result<Table, SchemaError> {
    match value {
        Value::Table(t) => Ok(t),
        other => Err(SchemaError::keyed(
            key,
            format!("`{key}` must be a table, not {}", type_name(&other)),
        )),
    }
}

fn function(key: &str, value: Value) -> Result<Function, SchemaError> {
    match value {
        Value::Function(f) => Ok(f),
        other => Err(SchemaError::keyed(
            key,
            format!("`{key}` must be a function, not {}", type_name(&other)),
        )),
    }
}

/// `resolver`: an agent (`claude`, `codex:MODEL`), a `[targets.NAME]`, or `cmd:COMMAND`.
fn resolver(value: Value) -> Result<String, SchemaError> {
    match &value {
        Value::String(s) if !s.to_string_lossy().trim().is_empty() => {
            Ok(s.to_string_lossy().trim().to_string())
        }
        other => Err(SchemaError::keyed(
            "resolver",
            format!(
                "`resolver` must name an agent (\"claude\"), a [targets.NAME] or \"cmd:COMMAND\", \
                 not {}",
                super::lua_ctx::describe(other)
            ),
        )),
    }
}

fn boolean(key: &str, value: Value) -> Result<bool, SchemaError> {
    match value {
        Value::Boolean(b) => Ok(b),
        other => Err(SchemaError::keyed(
            key,
            format!("`{key}` must be true or false, not {}", type_name(&other)),
        )),
    }
}

/// Extra secret patterns; compiled here only to reject bad ones at load, the pipeline compiles
/// its own set.
fn redact(table: &Table) -> Result<Vec<String>, SchemaError> {
    let mut out = Vec::new();
    for (i, value) in table.sequence_values::<Value>().enumerate() {
        let value = value.map_err(|e| SchemaError::new(e.to_string()))?;
        let Value::String(s) = value else {
            return Err(SchemaError::keyed(
                "redact",
                format!(
                    "redact[{}] must be a regex string, not {}",
                    i + 1,
                    type_name(&value)
                ),
            ));
        };
        let pattern = s.to_string_lossy();
        // Parse only: compiling is the redactor's job (once, for all patterns together), and
        // compiling here too would double the cost of every reload.
        if let Err(e) = regex_syntax::Parser::new().parse(&pattern) {
            let mut err = SchemaError::new(format!(
                "redact pattern `{pattern}` is not a valid regex: {e}"
            ));
            err.needle = Some(pattern.clone());
            return Err(err);
        }
        out.push(pattern);
    }
    let len = table.raw_len();
    if table.pairs::<Value, Value>().count() != len {
        return Err(SchemaError::keyed(
            "redact",
            "redact must be a list of regex strings (no named keys)",
        ));
    }
    Ok(out)
}

fn guards(table: &Table, slots: &mut [Option<Guard>]) -> Result<(), SchemaError> {
    let edges = edges();
    for pair in table.pairs::<Value, Value>() {
        let (key, value) = pair.map_err(|e| SchemaError::new(e.to_string()))?;
        let Value::String(key) = key else {
            return Err(SchemaError::keyed(
                "guards",
                format!(
                    "guards has a {} key; keys look like \"AUDIT_PENDING -> AUDITOR_EXECUTING\"",
                    type_name(&key)
                ),
            ));
        };
        let key = key.to_string_lossy();
        let (from, to) = guard_key(&key, &edges)?;
        let Value::Function(func) = value else {
            let mut err = SchemaError::new(format!(
                "guards[\"{key}\"] must be a function, not {}",
                type_name(&value)
            ));
            err.needle = Some(key.clone());
            return Err(err);
        };
        let name = format!("guards[{} -> {}]", from.as_str(), to.as_str());
        slots[guard_slot(from, to)] = Some(Guard { name, func });
    }
    Ok(())
}

/// Parses `"FROM -> TO"` and checks the machine can actually make that transition.
pub(crate) fn guard_key(
    key: &str,
    edges: &[(SessionState, SessionState)],
) -> Result<(SessionState, SessionState), SchemaError> {
    let with_needle = |message: String| SchemaError {
        message,
        needle: Some(key.to_string()),
    };
    let Some((from, to)) = key.split_once("->") else {
        return Err(with_needle(format!(
            "guard key \"{key}\" must look like \"FROM -> TO\""
        )));
    };
    let state = |name: &str| {
        name.trim().parse::<SessionState>().map_err(|_| {
            let names = SessionState::ALL.map(SessionState::as_str);
            let hint = suggest(name.trim(), &names)
                .map(|s| format!("; did you mean {s}?"))
                .unwrap_or_default();
            with_needle(format!(
                "guard key \"{key}\" names an unknown state `{}`{hint}",
                name.trim()
            ))
        })
    };
    let (from, to) = (state(from)?, state(to)?);
    if !edges.contains(&(from, to)) {
        return Err(with_needle(format!(
            "guard key \"{key}\" names a transition the session machine never makes"
        )));
    }
    Ok((from, to))
}

/// The closest valid name, if it is close enough to be a plausible typo.
pub(crate) fn suggest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .iter()
        .map(|c| (edit_distance(&lower, &c.to_ascii_lowercase()), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    strsim::levenshtein(a, b)
}

/// The first non-comment line mentioning `needle` as a whole word (1-based).
pub(crate) fn find_line(source: &str, needle: &str) -> Option<u32> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    source.lines().enumerate().find_map(|(i, line)| {
        if line.trim_start().starts_with("--") {
            return None;
        }
        line.match_indices(needle).find_map(|(at, _)| {
            let before = line[..at].chars().next_back();
            let after = line[at + needle.len()..].chars().next();
            (!before.is_some_and(word) && !after.is_some_and(word)).then_some(i as u32 + 1)
        })
    })
}
