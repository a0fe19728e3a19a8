//! Codex's model provider, read as Codex reads it: `-c`/`--config` overrides on its command
//! line first (the last one wins), then the profile's and the top level's `model_provider` in
//! `$CODEX_HOME/config.toml`, else its built-in `openai` provider. Codex takes its base URL from
//! the provider's `base_url` and its key from the variable the provider's `env_key` names, so
//! oneshot points it at the proxy with one more override (read after the user's, so it wins).

use super::Override;
use std::path::Path;

/// The provider oneshot defines for Codex's built-in OpenAI one (a built-in provider's base URL
/// cannot be overridden).
const OWN_ID: &str = "oneshot_openai";

/// The provider Codex will use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Chosen {
    /// Its built-in `openai` provider.
    BuiltIn,
    /// A provider the user defined, with its base URL and the variable holding its key.
    Custom {
        id: String,
        base_url: String,
        env_key: String,
    },
    /// A provider oneshot cannot point at the proxy (no base URL or no key variable, such as a
    /// local model with no key): the agent reaches it as configured, through the egress proxy.
    Unknown,
}

/// The provider `argv` and `own_dir`'s `config.toml` select.
pub(super) fn provider(argv: &[String], own_dir: Option<&Path>) -> Chosen {
    let overrides = overrides(argv);
    let from_argv = |key: &str| {
        overrides
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let config = own_dir
        .and_then(|d| std::fs::read_to_string(d.join("config.toml")).ok())
        .and_then(|text| text.parse::<toml::Table>().ok())
        .unwrap_or_default();
    let profile = profile_flag(argv)
        .or_else(|| from_argv("profile"))
        .or_else(|| config.get("profile")?.as_str().map(String::from));
    let from_config = |path: &[&str]| -> Option<String> {
        let mut at = config.get(path[0])?;
        for key in &path[1..] {
            at = at.get(key)?;
        }
        at.as_str().map(String::from)
    };
    let id = from_argv("model_provider")
        .or_else(|| {
            profile
                .as_deref()
                .and_then(|p| from_config(&["profiles", p, "model_provider"]))
        })
        .or_else(|| from_config(&["model_provider"]))
        .unwrap_or_else(|| "openai".into());
    let field = |name: &str| {
        from_argv(&format!("model_providers.{id}.{name}"))
            .or_else(|| from_config(&["model_providers", &id, name]))
    };
    match (field("base_url"), field("env_key")) {
        (Some(base_url), Some(env_key)) => Chosen::Custom {
            id,
            base_url,
            env_key,
        },
        // The built-in provider cannot be redefined.
        _ if id == "openai" => Chosen::BuiltIn,
        _ => Chosen::Unknown,
    }
}

/// The overrides that replace the built-in provider with oneshot's, whose key is in `key_var`.
pub(super) fn own_provider(key_var: &str) -> Vec<Override> {
    let field = |name: &str, value: &str| {
        (
            format!("model_providers.{OWN_ID}.{name}"),
            Some(value.to_string()),
        )
    };
    vec![
        ("model_provider".into(), Some(OWN_ID.into())),
        field("name", "OpenAI (through oneshot's proxy)"),
        (format!("model_providers.{OWN_ID}.base_url"), None),
        field("env_key", key_var),
        field("wire_api", "responses"),
    ]
}

/// The `key=value` overrides on a Codex command line (`-c k=v`, `--config k=v`,
/// `--config=k=v`, `-ck=v`), their values read as TOML where they parse (as Codex reads
/// them), else as plain strings.
fn overrides(argv: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut words = argv.iter();
    while let Some(word) = words.next() {
        let pair = match word.as_str() {
            "-c" | "--config" => words.next().map(String::as_str),
            w => w
                .strip_prefix("--config=")
                .or_else(|| w.strip_prefix("-c").filter(|r| !r.is_empty())),
        };
        if let Some((key, value)) = pair.and_then(|p| p.split_once('=')) {
            out.push((key.trim().to_string(), toml_string(value.trim())));
        }
    }
    out
}

/// A `-c` value as Codex reads it: TOML when it parses (`"x"` is `x`), else the text itself.
fn toml_string(value: &str) -> String {
    format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("v")?.as_str().map(String::from))
        .unwrap_or_else(|| value.to_string())
}

/// The profile named by `-p NAME`/`--profile NAME`/`--profile=NAME`.
fn profile_flag(argv: &[String]) -> Option<String> {
    let mut words = argv.iter();
    let mut found = None;
    while let Some(word) = words.next() {
        match word.as_str() {
            "-p" | "--profile" => found = words.next().cloned(),
            w => {
                if let Some(p) = w.strip_prefix("--profile=") {
                    found = Some(p.to_string());
                }
            }
        }
    }
    found
}
