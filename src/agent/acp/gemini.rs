//! Gemini CLI as an agent oneshot runs, over ACP (`gemini --acp`): its command line, its
//! transcript, its provider hint.

use crate::agent::launch::words;
use crate::agent::registry::AgentDef;
use crate::agent::{AgentSpec, AnswerSchema, Launch, Protocol, transcript};
use crate::executor::StdinMode;
use crate::process::Role;

/// Gemini CLI in the registry.
pub(crate) const GEMINI: AgentDef = AgentDef {
    name: "gemini",
    auth_hint: "set GEMINI_API_KEY (or log in by running `gemini` once); GOOGLE_GEMINI_BASE_URL \
                points it at another server",
    launch,
    can_resume: false,
    transcript: |_, session| transcript::gemini_transcript(session, |k: &str| std::env::var_os(k)),
    read_transcript: Some(transcript::read_gemini),
    transcript_messages: None,
    own_dir: |home, _| home.map(|h| h.join(".gemini")),
    co_author: "Gemini CLI <noreply@google.com>",
    takes_schema: false,
    model_api: Some(crate::sandbox::pointing::ModelApi {
        provider: crate::sandbox::proxy::Provider::Gemini,
        via: crate::sandbox::pointing::Via::BaseUrlVar("GOOGLE_GEMINI_BASE_URL"),
        key_vars: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        default_base: "https://generativelanguage.googleapis.com",
    }),
    credential_vars: &[
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ],
    api_hosts: &[
        "generativelanguage.googleapis.com",
        "cloudcode-pa.googleapis.com",
        "oauth2.googleapis.com",
    ],
};

/// ACP for either role: every tool asks first (the policy's `permit` answers) and
/// `session/cancel` stops a turn. The prompt goes through the protocol.
fn launch(spec: &AgentSpec, _: Role, _: Option<&str>, _: Option<AnswerSchema<'_>>) -> Launch {
    let mut argv = spec.argv();
    argv.extend(words(&["--acp", "--skip-trust"]));
    argv.extend(spec.model_flag("--model"));
    argv.extend(spec.args.iter().cloned());
    Launch {
        argv,
        stdin: StdinMode::Open,
        protocol: Protocol::Acp,
        env: Vec::new(),
    }
}
