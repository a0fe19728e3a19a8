//! The registry: every agent CLI and every protocol oneshot speaks, one line each. Each line
//! names a definition that lives in its protocol's folder; the `AgentKind` and `Protocol` enums
//! and their dispatch are made from these tables, so nothing else lists the agents.
//! docs/agents.md says how a new agent joins.

use super::driver::{Driver, DriverSetup};
use super::{AgentSpec, AnswerSchema, Launch};
use crate::process::Role;
use std::path::{Path, PathBuf};

/// The environment as a lookup (a test's, or the process's).
pub(crate) type Env<'a> = dyn Fn(&str) -> Option<std::ffi::OsString> + 'a;

/// What oneshot knows of one agent CLI. Each agent's folder defines one.
pub(crate) struct AgentDef {
    /// The name on the command line (`--worker NAME`), and the CLI's binary name.
    pub name: &'static str,
    /// The environment variables that point the CLI at its provider: what a user checks when
    /// authentication fails.
    pub auth_hint: &'static str,
    /// How to start the CLI as a role: the arguments after its binary, how the prompt gets in,
    /// which protocol its stdout speaks.
    pub launch: fn(&AgentSpec, Role, Option<&str>, Option<AnswerSchema<'_>>) -> Launch,
    /// Whether the CLI can continue an earlier session of its own on a later run.
    pub can_resume: bool,
    /// Where the CLI, run in a directory, files a session's transcript when its protocol does
    /// not name it (`None`: it names it, or keeps none).
    pub transcript: fn(&Path, &str) -> Option<PathBuf>,
    /// How to read what its transcript says a run did (`None`: oneshot reads none of it):
    /// what an auditor is shown besides the worker's output.
    pub read_transcript: Option<fn(&Path) -> Option<crate::process::TranscriptFacts>>,
    /// The assistant messages its transcript holds, in order (`None`: oneshot does not
    /// reconcile its runs with the transcript): a message there that the stream did not carry
    /// is added to the run's timeline at its end, and said.
    pub transcript_messages: Option<fn(&Path) -> Vec<crate::agent::transcript::TranscriptMessage>>,
    /// The directory the CLI keeps its config, sessions and caches in, given the home
    /// directory and the environment (its own variable first, when it has one): what
    /// confinement lets it write.
    pub own_dir: fn(Option<&Path>, &Env<'_>) -> Option<PathBuf>,
    /// The identity its work is signed with in a commit's `Co-authored-by` trailer.
    pub co_author: &'static str,
    /// Its command line takes an answer's JSON schema itself (`launch` passes it on), so a
    /// prompt need not carry it.
    pub takes_schema: bool,
    /// Its model API, when oneshot can hold the key for it (the sandbox's proxy adds the key;
    /// the agent holds a placeholder).
    pub model_api: Option<crate::sandbox::pointing::ModelApi>,
    /// The variables holding its own credentials: kept in its environment (the sandbox drops
    /// other credentials) unless the proxy holds its key ([`AgentDef::model_api`]).
    pub credential_vars: &'static [&'static str],
    /// The hosts of its model APIs and sign-in: what its sandbox's proxy lets it reach unless
    /// the policy denies them.
    pub api_hosts: &'static [&'static str],
}

/// The agents, in the order `--help` lists them: each line a variant of [`AgentKind`] (its
/// lowercase name is the CLI's) and the definition in the agent's folder.
macro_rules! agents {
    ($($(#[$doc:meta])* $kind:ident => $def:path,)+) => {
        /// The agent CLIs oneshot drives over their own protocols.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "lowercase")]
        #[non_exhaustive]
        pub enum AgentKind {
            $($(#[$doc])* $kind,)+
        }

        /// Every agent, in the order `--help` lists them.
        pub(crate) const AGENT_KINDS: &[AgentKind] = &[$(AgentKind::$kind,)+];

        impl AgentKind {
            /// Whether this agent's command line takes an answer's JSON schema itself.
            pub(crate) fn takes_schema(self) -> bool {
                self.def().takes_schema
            }

            /// The hosts of its model APIs (see [`AgentDef::api_hosts`]).
            pub fn api_hosts(self) -> &'static [&'static str] {
                self.def().api_hosts
            }

            /// The agent named `name` (the CLI's name), if one is.
            pub fn named(name: &str) -> Option<AgentKind> {
                AGENT_KINDS.iter().copied().find(|k| k.def().name == name)
            }

            /// The variables holding its own credentials (see [`AgentDef::credential_vars`]).
            pub fn credential_vars(self) -> &'static [&'static str] {
                self.def().credential_vars
            }

            /// Its model API, when oneshot can hold the key for it.
            pub fn model_api(self) -> Option<&'static crate::sandbox::pointing::ModelApi> {
                self.def().model_api.as_ref()
            }

            /// The identity this agent's work is signed with in a `Co-authored-by` trailer.
            pub fn co_author(self) -> &'static str {
                self.def().co_author
            }

            /// This agent's definition, from its folder.
            pub(crate) fn def(self) -> &'static AgentDef {
                match self {
                    $(AgentKind::$kind => &$def,)+
                }
            }
        }
    };
}

agents! {
    /// Claude Code (`claude`), over stream-json in both directions with its control protocol.
    Claude => super::claude::AGENT,
    /// Codex: `app-server` (JSON-RPC) for the worker, `exec --json` for the auditor.
    Codex => super::codex::AGENT,
    /// Gemini CLI (`gemini --acp`), over the Agent Client Protocol.
    Gemini => super::acp::GEMINI,
    /// Aider (`aider --message-file …`), plain text.
    Aider => super::aider::AGENT,
    /// Cline (`cline --json …`), JSON lines.
    Cline => super::cline::AGENT,
}

/// The protocols: each line a variant of [`Protocol`] and the function in the protocol's
/// folder that makes its [`Driver`] for one run.
macro_rules! protocols {
    ($($(#[$doc:meta])* $protocol:ident => $driver:path,)+) => {
        /// The protocols agents speak on stdout (and, for some, on stdin).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Protocol {
            $($(#[$doc])* $protocol,)+
        }

        impl Protocol {
            /// The driver for this protocol, set up for one run.
            pub fn driver(self, setup: DriverSetup) -> Box<dyn Driver> {
                match self {
                    $(Protocol::$protocol => $driver(setup),)+
                }
            }
        }
    };
}

protocols! {
    /// Claude Code `--output-format stream-json --verbose`.
    Claude => super::claude::driver,
    /// Codex `exec --json`.
    Codex => super::codex::exec_driver,
    /// Codex `app-server` (JSON-RPC both ways).
    CodexAppServer => super::codex::app_driver,
    /// The Agent Client Protocol (Gemini CLI `--acp`; JSON-RPC both ways).
    Acp => super::acp::driver,
    /// Gemini CLI `-p --output-format stream-json` (read only; see `agent/gemini_stream`).
    Gemini => super::gemini_stream::driver,
    /// Aider's plain text, read for its failures.
    Aider => super::aider::driver,
    /// Cline `--json`: `agent_event` lines and a final `run_result`.
    Cline => super::cline::driver,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variant, its serde name and the definition's name are one name.
    #[test]
    fn every_agent_is_named_once() {
        for kind in AGENT_KINDS {
            let serde = serde_json::to_value(kind).expect("serializes");
            assert_eq!(serde, kind.def().name, "{kind:?}");
            assert_eq!(format!("{kind:?}").to_lowercase(), kind.def().name);
        }
    }
}
