//! Claude Code as an agent oneshot runs: its command line, its transcript, its provider hint.

use crate::agent::launch::words;
use crate::agent::registry::AgentDef;
use crate::agent::{AgentSpec, AnswerSchema, Launch, Protocol, transcript};
use crate::executor::StdinMode;
use crate::process::Role;
use std::path::PathBuf;

/// Claude Code in the registry.
pub(crate) const AGENT: AgentDef = AgentDef {
    name: "claude",
    auth_hint: "set ANTHROPIC_API_KEY (or log in with `claude login`); ANTHROPIC_BASE_URL points \
                it at another server",
    launch,
    can_resume: true,
    transcript: |cwd, session| {
        transcript::claude_transcript(cwd, session, |k: &str| std::env::var_os(k))
    },
    read_transcript: Some(transcript::read_claude),
    transcript_messages: Some(transcript::claude_messages),
    own_dir: |home, var| {
        var("CLAUDE_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".claude")))
    },
    co_author: "Claude <noreply@anthropic.com>",
    takes_schema: true,
    model_api: Some(crate::sandbox::pointing::ModelApi {
        provider: crate::sandbox::proxy::Provider::Anthropic,
        via: crate::sandbox::pointing::Via::BaseUrlVar("ANTHROPIC_BASE_URL"),
        key_vars: &["ANTHROPIC_API_KEY"],
        default_base: "https://api.anthropic.com",
    }),
    credential_vars: &[
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
    ],
    api_hosts: &["api.anthropic.com", "console.anthropic.com", "claude.ai"],
};

/// The Claude Code flags that make it speak stream-json both ways, send every tool
/// permission question to oneshot (`--permission-prompt-tool stdio`, hidden from its `--help`)
/// and replay each user line as it takes it in (`--replay-user-messages`: how a message said
/// to the running agent is confirmed).
const CLAUDE_STREAM: [&str; 9] = [
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--permission-prompt-tool",
    "stdio",
    "--replay-user-messages",
];

/// Stream-json both ways for either role; the auditor's answer fits the schema given inline.
fn launch(
    spec: &AgentSpec,
    role: Role,
    resume: Option<&str>,
    schema: Option<AnswerSchema<'_>>,
) -> Launch {
    let mut argv = spec.argv();
    argv.extend(words(&CLAUDE_STREAM));
    argv.extend(spec.model_flag("--model"));
    if let Some(id) = resume {
        argv.extend(["--resume".to_string(), id.to_string()]);
    }
    if let Some(s) = schema.filter(|_| role == Role::Auditor) {
        argv.extend(["--json-schema".to_string(), s.text.to_string()]);
    }
    argv.extend(spec.args.iter().cloned());
    Launch {
        argv,
        stdin: StdinMode::Open,
        protocol: Protocol::Claude,
        env: Vec::new(),
    }
}
