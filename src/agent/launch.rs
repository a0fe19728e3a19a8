//! How an agent CLI is started for a role: its command line, how the prompt reaches it (once —
//! never both on the command line and on stdin, which every one of these CLIs would
//! concatenate), and which protocol its stdout speaks. Each agent's folder holds its own
//! command line (its `AgentDef::launch`, in the folder's `agent.rs`); this is what they share.
//!
//! Every flag there was checked against the pinned CLI versions (`tests/agents/main.rs`,
//! `docs/agents-offline.md`).

use super::{AgentSpec, Protocol};
use crate::executor::StdinMode;
use crate::process::Role;

/// What to start for one run of an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// argv: the binary, oneshot's flags, then the user's `--worker-arg`s; may hold
    /// `{prompt}` or `{prompt_file}`.
    pub argv: Vec<String>,
    /// How the prompt is delivered.
    pub stdin: StdinMode,
    /// What its stdout speaks.
    pub protocol: Protocol,
    /// Environment added for the run (oneshot's own environment passes through untouched).
    pub env: Vec<(String, String)>,
}

/// A JSON Schema the answer must fit, as the CLIs take it: Claude inline (`--json-schema`),
/// Codex from a file (`--output-schema`; the file must hold `text`).
#[derive(Debug, Clone, Copy)]
pub struct AnswerSchema<'a> {
    /// The schema's JSON.
    pub text: &'a str,
    /// A file holding it.
    pub file: &'a std::path::Path,
}

impl AgentSpec {
    /// How to start this agent as `role`; `resume` continues the agent's own earlier session
    /// (Claude `--resume`; Codex's through its protocol, see [`super::DriverSetup`]) where the
    /// CLI can. An auditor's answer is asked to fit `schema` where the CLI takes one (Claude,
    /// Codex; the others are asked in the prompt). Each agent's folder says how (its
    /// `AgentDef::launch`).
    pub fn launch(
        &self,
        role: Role,
        resume: Option<&str>,
        schema: Option<AnswerSchema<'_>>,
    ) -> Launch {
        (self.kind.def().launch)(self, role, resume, schema)
    }

    /// The protocol this agent speaks on stdout when it plays `role`.
    pub fn protocol(&self, role: Role) -> super::Protocol {
        self.launch(role, None, None).protocol
    }

    /// Whether this CLI can continue an earlier session of its own on a later run.
    pub fn can_resume(&self) -> bool {
        self.kind.def().can_resume
    }

    /// The CLI's own config directory (see `AgentDef::own_dir`) for the environment `vars`.
    pub fn own_dir(
        &self,
        vars: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> Option<std::path::PathBuf> {
        let var = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        (self.kind.def().own_dir)(crate::sandbox::outfit::home(vars), &var)
    }

    /// The start of every command line: the binary.
    pub(crate) fn argv(&self) -> Vec<String> {
        vec![self.kind.binary().to_string_lossy().into_owned()]
    }

    /// `FLAG MODEL` when a model was chosen, else nothing.
    pub(crate) fn model_flag(&self, flag: &str) -> Vec<String> {
        match &self.model {
            Some(m) => vec![flag.to_string(), m.clone()],
            None => Vec::new(),
        }
    }
}

/// Words as owned argv entries.
pub(crate) fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::{PROMPT_FILE_PLACEHOLDER, PROMPT_PLACEHOLDER};

    fn verdict() -> Option<AnswerSchema<'static>> {
        Some(AnswerSchema {
            text: super::super::VERDICT_SCHEMA,
            file: std::path::Path::new("/s.json"),
        })
    }

    fn spec(text: &str) -> AgentSpec {
        AgentSpec::parse(text).unwrap()
    }

    /// The prompt reaches each CLI exactly one way.
    #[test]
    fn the_prompt_has_one_way_in() {
        for kind in super::super::AGENT_KINDS.iter().copied() {
            for role in [Role::Worker, Role::Auditor] {
                let l = spec(kind.name()).launch(role, None, verdict());
                let in_argv = l
                    .argv
                    .iter()
                    .filter(|w| {
                        w.contains(PROMPT_PLACEHOLDER) || w.contains(PROMPT_FILE_PLACEHOLDER)
                    })
                    .count();
                match l.stdin {
                    StdinMode::Prompt | StdinMode::Open => assert_eq!(in_argv, 0, "{kind}"),
                    StdinMode::Empty => assert_eq!(in_argv, 1, "{kind}"),
                }
            }
        }
    }

    #[test]
    fn models_resume_and_user_arguments_are_placed() {
        let mut s = spec("claude:opus");
        s.args = vec!["--max-turns".into(), "3".into()];
        let l = s.launch(Role::Worker, Some("sid-1"), verdict());
        let tail = &l.argv[l.argv.len() - 6..];
        assert_eq!(
            tail,
            ["--model", "opus", "--resume", "sid-1", "--max-turns", "3"]
        );
        assert_eq!(l.protocol, Protocol::Claude);

        let l = spec("codex:gpt-5.5").launch(Role::Auditor, Some("t-9"), verdict());
        let tail = &l.argv[l.argv.len() - 5..];
        assert_eq!(tail, ["--model", "gpt-5.5", "resume", "t-9", "-"]);
        assert!(l.argv.windows(2).any(|w| w == ["--sandbox", "read-only"]));
        assert!(
            l.argv
                .windows(2)
                .any(|w| w == ["--output-schema", "/s.json"])
        );
        let l = spec("claude").launch(Role::Auditor, None, verdict());
        assert!(
            l.argv
                .windows(2)
                .any(|w| w[0] == "--json-schema" && w[1] == super::super::VERDICT_SCHEMA)
        );

        let l = spec("gemini").launch(Role::Worker, None, verdict());
        assert!(l.argv.contains(&"--acp".to_string()));
        assert_eq!((l.stdin, l.protocol), (StdinMode::Open, Protocol::Acp));
        let l = spec("codex:gpt-5.5").launch(Role::Worker, Some("t-1"), verdict());
        assert_eq!(
            &l.argv[1..],
            ["app-server"],
            "model and thread go through the protocol"
        );
        assert_eq!(l.protocol, Protocol::CodexAppServer);
        let l = spec("aider").launch(Role::Auditor, None, verdict());
        assert!(l.argv.windows(2).any(|w| w == ["--chat-mode", "ask"]));

        let mut s = spec("cline:gpt-x");
        s.args = vec!["--data-dir=/d".into()];
        let l = s.launch(Role::Worker, Some("ignored"), verdict());
        let tail = &l.argv[l.argv.len() - 5..];
        assert_eq!(
            tail,
            ["--model", "gpt-x", "--data-dir=/d", "--", "{prompt}\n"]
        );
        assert!(l.argv.windows(2).any(|w| w == ["--auto-approve", "true"]));
        assert_eq!(l.protocol, Protocol::Cline);
        let l = spec("cline").launch(Role::Auditor, None, verdict());
        assert!(l.argv.iter().any(|w| w == "--plan"));
        assert!(!l.argv.iter().any(|w| w == "--auto-approve"));
    }
}
