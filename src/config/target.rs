//! Named targets for `oneshot ask` and `oneshot eval` (`[targets.NAME]` tables): an agent with
//! its model and arguments, or a command line, and the environment it runs with. Secrets are
//! never written in the file: an environment value `$NAME` is read from oneshot's own
//! environment when the target is used.

use toml::Spanned;
use toml::de::DeValue;

/// One `[targets.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetDef {
    /// Its name, as `--target NAME` gives it.
    pub name: String,
    /// What runs.
    pub runs: Runs,
    /// `args = [...]`: added to the agent's command line.
    pub args: Vec<String>,
    /// `env = { KEY = "value" | "$FROM_ENV" }`, in the file's order.
    pub env: Vec<(String, String)>,
    /// Its line in the file (1-based).
    pub line: usize,
}

/// What a target runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runs {
    /// `agent = "claude:opus"`.
    Agent(String),
    /// `cmd = "sh judge.sh"`.
    Cmd(String),
}

/// The keys a target table may have.
const TARGET_KEYS: [&str; 4] = ["agent", "cmd", "args", "env"];

impl TargetDef {
    /// The environment with every `$NAME` read from `lookup`; the first that is not set is the
    /// error (its variable's name).
    pub fn resolved_env(
        &self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<(String, String)>, String> {
        self.env
            .iter()
            .map(|(k, v)| match v.strip_prefix('$') {
                Some(var) => {
                    let var = var.trim_start_matches('{').trim_end_matches('}');
                    lookup(var)
                        .map(|val| (k.clone(), val))
                        .ok_or_else(|| var.to_string())
                }
                None => Ok((k.clone(), v.clone())),
            })
            .collect()
    }
}

/// Reads the `targets` table; `Err((byte offset, message))` names what is wrong and where.
pub(super) fn parse(
    value: &Spanned<DeValue<'_>>,
    line_of: impl Fn(usize) -> usize,
) -> Result<Vec<TargetDef>, (usize, String)> {
    let DeValue::Table(table) = value.get_ref() else {
        return Err((
            value.span().start,
            "targets must be a table: [targets.NAME]".into(),
        ));
    };
    let mut out = Vec::new();
    for (name, def) in table {
        let at = name.span().start;
        let name = name.get_ref().to_string();
        let DeValue::Table(keys) = def.get_ref() else {
            return Err((
                at,
                format!("targets.{name} must be a table (agent = …, or cmd = …)"),
            ));
        };
        let (mut agent, mut cmd) = (None, None);
        let mut t = TargetDef {
            name: name.clone(),
            runs: Runs::Cmd(String::new()),
            args: Vec::new(),
            env: Vec::new(),
            line: line_of(at),
        };
        for (key, v) in keys {
            let k = key.get_ref().as_ref();
            let here = v.span().start;
            let text = |what: &str| match v.get_ref() {
                DeValue::String(s) if !s.trim().is_empty() => Ok(s.to_string()),
                _ => Err((here, format!("targets.{name}.{k} must be {what}"))),
            };
            match k {
                "agent" => agent = Some(text("an agent string like \"claude:opus\"")?),
                "cmd" => cmd = Some(text("a command-line string")?),
                "args" => match v.get_ref() {
                    DeValue::Array(items) => {
                        for i in items {
                            match i.get_ref() {
                                DeValue::String(s) => t.args.push(s.to_string()),
                                _ => {
                                    return Err((
                                        i.span().start,
                                        format!("targets.{name}.args must be an array of strings"),
                                    ));
                                }
                            }
                        }
                    }
                    _ => {
                        return Err((
                            here,
                            format!("targets.{name}.args must be an array of strings"),
                        ));
                    }
                },
                "env" => match v.get_ref() {
                    DeValue::Table(vars) => {
                        for (var, val) in vars {
                            match val.get_ref() {
                                DeValue::String(s) => {
                                    t.env.push((var.get_ref().to_string(), s.to_string()))
                                }
                                _ => {
                                    return Err((
                                        val.span().start,
                                        format!(
                                            "targets.{name}.env.{} must be a string (\"$VAR\" reads it from the environment)",
                                            var.get_ref()
                                        ),
                                    ));
                                }
                            }
                        }
                    }
                    _ => {
                        return Err((
                            here,
                            format!("targets.{name}.env must be a table: {{ KEY = \"value\" }}"),
                        ));
                    }
                },
                other => {
                    let hint = match crate::policy::suggest_name(other, &TARGET_KEYS) {
                        Some(near) => format!("did you mean {near}?"),
                        None => format!("the keys are {}", TARGET_KEYS.join(", ")),
                    };
                    return Err((
                        key.span().start,
                        format!("unknown key targets.{name}.{other}; {hint}"),
                    ));
                }
            }
        }
        t.runs = match (agent, cmd) {
            (Some(_), Some(_)) => {
                return Err((
                    at,
                    format!("targets.{name} has both agent and cmd; give one"),
                ));
            }
            (None, None) => {
                return Err((
                    at,
                    format!(
                        "targets.{name} needs agent = \"AGENT[:MODEL]\" or cmd = \"COMMAND LINE\""
                    ),
                ));
            }
            (Some(a), None) => {
                if let Err(e) = crate::agent::AgentSpec::parse(&a) {
                    return Err((at, format!("targets.{name}.agent: {e}")));
                }
                Runs::Agent(a)
            }
            (None, Some(c)) => Runs::Cmd(c),
        };
        out.push(t);
    }
    Ok(out)
}
