//! Which agent plays a role: `claude`, `codex:gpt-5.5`, … as given to `--worker` and `--auditor`
//! (or `worker = "…"` in `oneshot.toml`), and where its binary is.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

use super::AgentKind;
use super::registry::AGENT_KINDS;

impl AgentKind {
    /// The name as written on the command line (and the CLI's binary name).
    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// The environment variable that names this agent's binary (`ONESHOT_CLAUDE_BIN`, …).
    pub fn bin_env(self) -> String {
        format!("ONESHOT_{}_BIN", self.name().to_ascii_uppercase())
    }

    /// The binary to run: `$ONESHOT_<AGENT>_BIN` when set and not empty, else the bare name,
    /// looked up on PATH when the process starts.
    pub fn binary(self) -> PathBuf {
        match std::env::var_os(self.bin_env()) {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => PathBuf::from(self.name()),
        }
    }

    /// The environment variables that point the CLI at its provider: what a user checks when
    /// authentication fails.
    pub fn auth_hint(self) -> &'static str {
        self.def().auth_hint
    }
}

impl std::fmt::Display for AgentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An agent for a role: which CLI, which model, and extra arguments for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// The CLI.
    pub kind: AgentKind,
    /// The model (`--model`), when chosen; else the CLI's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Arguments added to the CLI's command line (`--worker-arg`), after oneshot's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

/// A `--worker`/`--auditor` value that names no agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// Not one of the agents.
    #[error(
        "unknown agent {given:?}: expected one of claude, codex, gemini, aider, cline or cmd{hint}"
    )]
    Unknown {
        /// What was given.
        given: String,
        /// ` (did you mean …?)` or empty.
        hint: String,
    },
    /// `AGENT:` with nothing after the colon.
    #[error("{given:?} names no model after the colon: write {agent} or {agent}:MODEL")]
    EmptyModel {
        /// What was given.
        given: String,
        /// The agent part.
        agent: String,
    },
}

impl AgentSpec {
    /// Parses `AGENT[:MODEL]`. `cmd` is not an agent (it means the command given with
    /// `--worker-cmd`): callers handle it before this.
    pub fn parse(text: &str) -> Result<AgentSpec, SpecError> {
        let (name, model) = match text.split_once(':') {
            Some((n, m)) => (n, Some(m)),
            None => (text, None),
        };
        let name = name.trim().to_ascii_lowercase();
        let Some(kind) = AGENT_KINDS.iter().copied().find(|k| k.name() == name) else {
            let names: Vec<&str> = AGENT_KINDS.iter().map(|k| k.name()).collect();
            let hint = crate::policy::suggest_name(&name, &names)
                .map(|s| format!(" (did you mean {s}?)"))
                .unwrap_or_default();
            return Err(SpecError::Unknown {
                given: text.to_string(),
                hint,
            });
        };
        let model = match model.map(str::trim) {
            Some("") => {
                return Err(SpecError::EmptyModel {
                    given: text.to_string(),
                    agent: name,
                });
            }
            m => m.map(str::to_string),
        };
        Ok(AgentSpec {
            kind,
            model,
            args: Vec::new(),
        })
    }
}

impl std::fmt::Display for AgentSpec {
    /// `claude` or `claude:MODEL` (the arguments are not shown).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.model {
            Some(m) => write!(f, "{}:{m}", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_and_models_parse() {
        let s = AgentSpec::parse("claude").unwrap();
        assert_eq!((s.kind, s.model), (AgentKind::Claude, None));
        let s = AgentSpec::parse("codex:gpt-5.5").unwrap();
        assert_eq!(s.kind, AgentKind::Codex);
        assert_eq!(s.model.as_deref(), Some("gpt-5.5"));
        assert_eq!(s.to_string(), "codex:gpt-5.5");
        // A model may itself hold a colon (Ollama tags, provider prefixes).
        let s = AgentSpec::parse("aider:ollama/llama3:8b").unwrap();
        assert_eq!(s.model.as_deref(), Some("ollama/llama3:8b"));
        assert_eq!(AgentSpec::parse("Gemini").unwrap().kind, AgentKind::Gemini);
    }

    #[test]
    fn mistakes_are_named() {
        let e = AgentSpec::parse("cluade").unwrap_err().to_string();
        assert!(e.contains("did you mean claude?"), "{e}");
        let e = AgentSpec::parse("codex:").unwrap_err().to_string();
        assert!(e.contains("codex:MODEL"), "{e}");
    }

    #[test]
    fn binaries_come_from_the_environment_or_path() {
        assert_eq!(AgentKind::Aider.bin_env(), "ONESHOT_AIDER_BIN");
        // The variable is not set in the test environment for gemini.
        if std::env::var_os("ONESHOT_GEMINI_BIN").is_none() {
            assert_eq!(AgentKind::Gemini.binary(), PathBuf::from("gemini"));
        }
    }
}
