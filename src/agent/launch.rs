//! How each agent CLI is started for a role: its command line, how the prompt reaches it (once —
//! never both on the command line and on stdin, which every one of these CLIs would
//! concatenate), and which protocol its stdout speaks.
//!
//! Every flag here was checked against the pinned CLI versions (`tests/agents_offline.rs`,
//! `docs/agents-offline.md`).

use super::{AgentKind, AgentSpec, Protocol};
use crate::executor::{PROMPT_FILE_PLACEHOLDER, PROMPT_PLACEHOLDER, StdinMode};
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

/// The Claude Code flags that make it speak stream-json both ways and send every tool
/// permission question to oneshot (`--permission-prompt-tool stdio`, hidden from its `--help`).
const CLAUDE_STREAM: [&str; 8] = [
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--permission-prompt-tool",
    "stdio",
];

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
    /// Codex; the others are asked in the prompt).
    pub fn launch(
        &self,
        role: Role,
        resume: Option<&str>,
        schema: Option<AnswerSchema<'_>>,
    ) -> Launch {
        let bin = self.kind.binary().to_string_lossy().into_owned();
        let mut argv = vec![bin];
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let model = |flag: &str| match &self.model {
            Some(m) => vec![flag.to_string(), m.clone()],
            None => Vec::new(),
        };
        let mut env = Vec::new();
        let (stdin, protocol) = match self.kind {
            AgentKind::Claude => {
                argv.extend(words(&CLAUDE_STREAM));
                argv.extend(model("--model"));
                if let Some(id) = resume {
                    argv.extend(["--resume".to_string(), id.to_string()]);
                }
                if let Some(s) = schema.filter(|_| role == Role::Auditor) {
                    argv.extend(["--json-schema".to_string(), s.text.to_string()]);
                }
                argv.extend(self.args.iter().cloned());
                (StdinMode::Open, Protocol::Claude)
            }
            // The worker runs under `app-server`, whose approval requests the policy answers and
            // whose turns can be interrupted; the auditor's one-shot judgement is an `exec` run,
            // which takes the verdict schema.
            AgentKind::Codex if role == Role::Worker => {
                argv.push("app-server".into());
                argv.extend(self.args.iter().cloned());
                (StdinMode::Open, Protocol::CodexAppServer)
            }
            AgentKind::Codex => {
                argv.extend(words(&["exec", "--json", "--skip-git-repo-check"]));
                argv.extend(words(&["--sandbox", "read-only"]));
                if let Some(s) = schema {
                    argv.push("--output-schema".into());
                    argv.push(s.file.to_string_lossy().into_owned());
                }
                argv.extend(model("--model"));
                argv.extend(self.args.iter().cloned());
                if let Some(id) = resume {
                    argv.extend(["resume".to_string(), id.to_string()]);
                }
                // `-`: the prompt is read from stdin, whatever its size.
                argv.push("-".into());
                (StdinMode::Prompt, Protocol::Codex)
            }
            // ACP: every tool asks first (the policy's `permit` answers, for either role) and
            // `session/cancel` stops a turn.
            AgentKind::Gemini => {
                argv.extend(words(&["--acp", "--skip-trust"]));
                argv.extend(model("--model"));
                argv.extend(self.args.iter().cloned());
                (StdinMode::Open, Protocol::Acp)
            }
            AgentKind::Aider => {
                argv.extend(words(&[
                    "--yes-always",
                    "--no-pretty",
                    "--no-stream",
                    "--no-auto-commits",
                    "--no-check-update",
                    "--analytics-disable",
                    "--no-show-model-warnings",
                    // A URL in the prompt (a previous attempt's output quoting Aider's own
                    // release-notes link) would otherwise be scraped — and Playwright installed
                    // to scrape it: a network fetch nobody asked for, from text an agent wrote.
                    "--no-detect-urls",
                    "--no-show-release-notes",
                ]));
                if role == Role::Auditor {
                    // Answers questions, edits nothing.
                    argv.extend(words(&["--chat-mode", "ask"]));
                }
                argv.extend(model("--model"));
                argv.extend(self.args.iter().cloned());
                argv.extend([
                    "--message-file".to_string(),
                    PROMPT_FILE_PLACEHOLDER.to_string(),
                ]);
                // litellm otherwise downloads its model price list from GitHub on every start.
                env.push(("LITELLM_LOCAL_MODEL_COST_MAP".into(), "True".into()));
                (StdinMode::Empty, Protocol::Aider)
            }
            AgentKind::Cline => {
                argv.push("--json".into());
                match role {
                    // Tools run without asking, whatever the user's `toolAutoApprove` says:
                    // headless, nobody could answer.
                    Role::Worker => argv.extend(words(&["--auto-approve", "true"])),
                    // Plan mode offers no file-editing tool and refuses shell commands that
                    // write (Cline's own check of each command).
                    Role::Auditor => argv.push("--plan".into()),
                }
                argv.extend(model("--model"));
                argv.extend(self.args.iter().cloned());
                // `--json` takes the prompt from argv only (a piped stdin is appended to it),
                // and refuses a prompt word without whitespace as an "unquoted prompt": the
                // newline makes any prompt pass that check and Cline trims it off. `--` keeps
                // a prompt starting with `-` from being read as an option.
                argv.extend(["--".to_string(), format!("{PROMPT_PLACEHOLDER}\n")]);
                // A headless run must not update the CLI under the user's feet.
                env.push(("CLINE_NO_AUTO_UPDATE".into(), "1".into()));
                (StdinMode::Empty, Protocol::Cline)
            }
        };
        Launch {
            argv,
            stdin,
            protocol,
            env,
        }
    }

    /// The protocol this agent speaks on stdout when it plays `role`.
    pub fn protocol(&self, role: Role) -> super::Protocol {
        self.launch(role, None, None).protocol
    }

    /// Whether this CLI can continue an earlier session of its own on a later run.
    pub fn can_resume(&self) -> bool {
        matches!(self.kind, AgentKind::Claude | AgentKind::Codex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for kind in super::super::AGENT_KINDS {
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
