//! Aider as an agent oneshot runs: its command line and its provider hint. It keeps no
//! transcript oneshot reads and cannot resume a session.

use crate::agent::launch::words;
use crate::agent::registry::AgentDef;
use crate::agent::{AgentSpec, AnswerSchema, Launch, Protocol};
use crate::executor::{PROMPT_FILE_PLACEHOLDER, StdinMode};
use crate::process::Role;

/// Aider in the registry.
pub(crate) const AGENT: AgentDef = AgentDef {
    name: "aider",
    auth_hint: "set the provider's key (OPENAI_API_KEY, ANTHROPIC_API_KEY, …) and, for another \
                server, OPENAI_API_BASE",
    launch,
    can_resume: false,
    transcript: |_, _| None,
    read_transcript: None,
    transcript_messages: None,
    own_dir: |home, _| home.map(|h| h.join(".aider")),
    co_author: "aider <noreply@aider.chat>",
    takes_schema: false,
    model_api: None,
    credential_vars: &[
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OPENROUTER_API_KEY",
        "DEEPSEEK_API_KEY",
        "AZURE_API_KEY",
    ],
    api_hosts: &[
        "api.openai.com",
        "api.anthropic.com",
        "generativelanguage.googleapis.com",
        "openrouter.ai",
        "api.deepseek.com",
    ],
};

/// Headless, the prompt from a file; the auditor in ask mode, which edits nothing.
fn launch(spec: &AgentSpec, role: Role, _: Option<&str>, _: Option<AnswerSchema<'_>>) -> Launch {
    let mut argv = spec.argv();
    argv.extend(words(&[
        "--yes-always",
        "--no-pretty",
        "--no-stream",
        "--no-auto-commits",
        "--no-check-update",
        "--analytics-disable",
        "--no-show-model-warnings",
        // A URL in the prompt (a previous attempt's output quoting Aider's own release-notes
        // link) would otherwise be scraped — and Playwright installed to scrape it: a network
        // fetch nobody asked for, from text an agent wrote.
        "--no-detect-urls",
        "--no-show-release-notes",
    ]));
    if role == Role::Auditor {
        // Answers questions, edits nothing.
        argv.extend(words(&["--chat-mode", "ask"]));
    }
    argv.extend(spec.model_flag("--model"));
    argv.extend(spec.args.iter().cloned());
    argv.extend([
        "--message-file".to_string(),
        PROMPT_FILE_PLACEHOLDER.to_string(),
    ]);
    Launch {
        argv,
        stdin: StdinMode::Empty,
        protocol: Protocol::Aider,
        // litellm otherwise downloads its model price list from GitHub on every start.
        env: vec![("LITELLM_LOCAL_MODEL_COST_MAP".into(), "True".into())],
    }
}
