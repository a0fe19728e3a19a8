//! Codex as an agent oneshot runs: its command line for each role, its provider hint. Codex
//! names its transcript itself (`thread.path`, `SessionStarted::transcript`).

use crate::agent::launch::words;
use crate::agent::registry::AgentDef;
use crate::agent::{AgentSpec, AnswerSchema, Launch, Protocol};
use crate::executor::StdinMode;
use crate::process::Role;
use std::path::PathBuf;

/// Codex in the registry.
pub(crate) const AGENT: AgentDef = AgentDef {
    name: "codex",
    auth_hint: "set OPENAI_API_KEY (or log in with `codex login`), or the env_key of the \
                model_provider in $CODEX_HOME/config.toml",
    launch,
    can_resume: true,
    transcript: |_, _| None,
    read_transcript: Some(crate::agent::transcript::read_codex),
    transcript_messages: None,
    own_dir: |home, var| {
        var("CODEX_HOME")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".codex")))
    },
    co_author: "Codex <noreply@openai.com>",
    takes_schema: true,
    model_api: Some(crate::sandbox::pointing::ModelApi {
        provider: crate::sandbox::proxy::Provider::OpenAi,
        via: crate::sandbox::pointing::Via::CodexProvider,
        key_vars: &["OPENAI_API_KEY", "CODEX_API_KEY"],
        default_base: "https://api.openai.com/v1",
    }),
    credential_vars: &["OPENAI_API_KEY", "CODEX_API_KEY"],
    api_hosts: &["api.openai.com", "chatgpt.com", "auth.openai.com"],
};

/// The worker runs under `app-server`, whose approval requests the policy answers and whose
/// turns can be interrupted; the auditor's one-shot judgement is an `exec` run, which takes the
/// verdict schema.
fn launch(
    spec: &AgentSpec,
    role: Role,
    resume: Option<&str>,
    schema: Option<AnswerSchema<'_>>,
) -> Launch {
    let mut argv = spec.argv();
    if role == Role::Worker {
        // The model and the thread to resume go through the protocol.
        argv.push("app-server".into());
        argv.extend(spec.args.iter().cloned());
        return Launch {
            argv,
            stdin: StdinMode::Open,
            protocol: Protocol::CodexAppServer,
            env: Vec::new(),
        };
    }
    argv.extend(words(&["exec", "--json", "--skip-git-repo-check"]));
    argv.extend(words(&["--sandbox", "read-only"]));
    if let Some(s) = schema {
        argv.push("--output-schema".into());
        argv.push(s.file.to_string_lossy().into_owned());
    }
    argv.extend(spec.model_flag("--model"));
    argv.extend(spec.args.iter().cloned());
    if let Some(id) = resume {
        argv.extend(["resume".to_string(), id.to_string()]);
    }
    // `-`: the prompt is read from stdin, whatever its size.
    argv.push("-".into());
    Launch {
        argv,
        stdin: StdinMode::Prompt,
        protocol: Protocol::Codex,
        env: Vec::new(),
    }
}
