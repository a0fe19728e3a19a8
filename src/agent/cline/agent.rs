//! Cline as an agent oneshot runs: its command line and its provider hint. It prints no
//! session id in `--json` mode and cannot resume one headless.

use crate::agent::launch::words;
use crate::agent::registry::AgentDef;
use crate::agent::{AgentSpec, AnswerSchema, Launch, Protocol};
use crate::executor::{PROMPT_PLACEHOLDER, StdinMode};
use crate::process::Role;

/// Cline in the registry.
pub(crate) const AGENT: AgentDef = AgentDef {
    name: "cline",
    auth_hint: "configure a provider and its key with `cline auth` (-b URL for another \
                server); --data-dir=DIR as a --worker-arg/--auditor-arg picks another Cline \
                configuration",
    launch,
    can_resume: false,
    transcript: |_, _| None,
    read_transcript: None,
    transcript_messages: None,
    own_dir: |home, _| home.map(|h| h.join(".cline")),
    co_author: "Cline <noreply@cline.bot>",
    takes_schema: false,
    model_api: None,
    credential_vars: &[],
    api_hosts: &[
        "api.cline.bot",
        "api.anthropic.com",
        "api.openai.com",
        "openrouter.ai",
    ],
};

/// `--json`, the prompt as the last argument; the worker auto-approves, the auditor plans.
fn launch(spec: &AgentSpec, role: Role, _: Option<&str>, _: Option<AnswerSchema<'_>>) -> Launch {
    let mut argv = spec.argv();
    argv.push("--json".into());
    match role {
        // Tools run without asking, whatever the user's `toolAutoApprove` says: headless,
        // nobody could answer.
        Role::Worker => argv.extend(words(&["--auto-approve", "true"])),
        // Plan mode offers no file-editing tool and refuses shell commands that write
        // (Cline's own check of each command).
        Role::Auditor => argv.push("--plan".into()),
    }
    argv.extend(spec.model_flag("--model"));
    argv.extend(spec.args.iter().cloned());
    // `--json` takes the prompt from argv only (a piped stdin is appended to it), and refuses a
    // prompt word without whitespace as an "unquoted prompt": the newline makes any prompt pass
    // that check and Cline trims it off. `--` keeps a prompt starting with `-` from being read
    // as an option.
    argv.extend(["--".to_string(), format!("{PROMPT_PLACEHOLDER}\n")]);
    Launch {
        argv,
        stdin: StdinMode::Empty,
        protocol: Protocol::Cline,
        // A headless run must not update the CLI under the user's feet.
        env: vec![("CLINE_NO_AUTO_UPDATE".into(), "1".into())],
    }
}
