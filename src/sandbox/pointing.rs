//! How oneshot points an agent CLI at its model API through the proxy, so that the proxy holds
//! the key: which variables (or, for Codex, which `-c` overrides) name the base URL and the
//! key, and what the agent gets instead (the proxy's address and a placeholder).

mod codex;

use super::proxy::{ModelRoute, Provider};
use std::path::Path;

/// The value an agent's key variable holds when the proxy holds the real key: anything else
/// would be the key itself.
pub const PLACEHOLDER_KEY: &str = "oneshot-proxy-holds-the-key";

/// How a CLI learns where its model API is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Via {
    /// From a variable naming the base URL (Claude Code's `ANTHROPIC_BASE_URL`).
    BaseUrlVar(&'static str),
    /// From Codex's model provider: the one its command line (`-c model_provider=…`) or its
    /// `config.toml` selects, else its built-in OpenAI provider.
    CodexProvider,
}

/// An agent CLI's model API as oneshot points it at the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelApi {
    /// Whose API.
    pub provider: Provider,
    /// How the CLI learns the base URL.
    pub via: Via,
    /// The variables the CLI reads its key from, the one oneshot reads first.
    pub key_vars: &'static [&'static str],
    /// The API's own base URL.
    pub default_base: &'static str,
}

/// What an agent's command line and config say: where `point` looks besides the environment.
#[derive(Debug, Clone, Copy)]
pub struct AgentWords<'a> {
    /// The agent's argv (or the words of it that hold the user's own arguments).
    pub argv: &'a [String],
    /// The user's own arguments (`--worker-arg`s): words oneshot adds go right after them,
    /// so that oneshot's win.
    pub user_args: &'a [String],
    /// How many words the program takes (`codex`: 1): where oneshot's words go when the user
    /// gave none.
    pub program_len: usize,
    /// The CLI's own config directory (Codex's `$CODEX_HOME`), when it has one.
    pub own_dir: Option<&'a Path>,
}

/// One `-c key=value` override oneshot adds to the agent's command line; `None` as the value
/// stands for the proxy's address.
type Override = (String, Option<String>);

/// An agent pointed at the proxy: the route the proxy takes with the real key, and what the
/// agent is given instead.
#[derive(Debug, Clone)]
pub struct Pointing {
    /// Where the proxy sends the agent's model requests, with the real key.
    pub route: ModelRoute,
    /// The variable set to the proxy's address, when the CLI reads its base URL from one.
    base_url_var: Option<&'static str>,
    /// The variables set to [`PLACEHOLDER_KEY`].
    key_vars: Vec<String>,
    /// `-c` overrides, inserted after `user_args` (or after the program's `program_len` words).
    overrides: Vec<Override>,
    user_args: Vec<String>,
    program_len: usize,
}

impl Pointing {
    /// The variables that point the agent at the proxy at `proxy` (`http://127.0.0.1:PORT`).
    pub fn env(&self, proxy: &str) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = self
            .base_url_var
            .map(|v| (v.to_string(), proxy.to_string()))
            .into_iter()
            .collect();
        env.extend(
            self.key_vars
                .iter()
                .map(|k| (k.clone(), PLACEHOLDER_KEY.to_string())),
        );
        env
    }

    /// `argv` with the words that point the agent at the proxy at `proxy`.
    pub fn argv(&self, argv: &mut Vec<String>, proxy: &str) {
        if self.overrides.is_empty() {
            return;
        }
        let at = after(argv, &self.user_args).unwrap_or(self.program_len.min(argv.len()));
        let words = self.overrides.iter().flat_map(|(key, value)| {
            let value = value.as_deref().unwrap_or(proxy);
            [
                "-c".to_string(),
                format!("{key}={}", toml::Value::String(value.to_string())),
            ]
        });
        argv.splice(at..at, words);
    }
}

impl ModelApi {
    /// How to point the agent at the proxy with the key its environment `var` holds
    /// (oneshot's own), or `None` when oneshot holds no key for it: the agent then uses its
    /// own credentials (a login kept in its config directory), straight through the egress
    /// proxy.
    pub fn point(
        &self,
        var: &dyn Fn(&str) -> Option<String>,
        words: AgentWords<'_>,
    ) -> Option<Pointing> {
        let set = |v: Option<String>| v.filter(|v| !v.is_empty() && v != PLACEHOLDER_KEY);
        match self.via {
            Via::BaseUrlVar(base_url_var) => {
                let key = self.key_vars.iter().find_map(|k| set(var(k)))?;
                let upstream = set(var(base_url_var)).unwrap_or_else(|| self.default_base.into());
                Some(Pointing {
                    route: ModelRoute {
                        provider: self.provider,
                        upstream,
                        key,
                    },
                    base_url_var: Some(base_url_var),
                    key_vars: self.key_vars.iter().map(|k| k.to_string()).collect(),
                    overrides: Vec::new(),
                    user_args: Vec::new(),
                    program_len: 0,
                })
            }
            Via::CodexProvider => {
                let chosen = codex::provider(words.argv, words.own_dir);
                let (key_vars, upstream, overrides) = match chosen {
                    codex::Chosen::BuiltIn => (
                        self.key_vars.iter().map(|k| k.to_string()).collect(),
                        set(var("OPENAI_BASE_URL")).unwrap_or_else(|| self.default_base.into()),
                        codex::own_provider(self.key_vars[0]),
                    ),
                    codex::Chosen::Custom {
                        id,
                        base_url,
                        env_key,
                    } => (
                        vec![env_key],
                        base_url,
                        vec![(format!("model_providers.{id}.base_url"), None)],
                    ),
                    codex::Chosen::Unknown => return None,
                };
                let key = key_vars.iter().find_map(|k| set(var(k)))?;
                Some(Pointing {
                    route: ModelRoute {
                        provider: self.provider,
                        upstream,
                        key,
                    },
                    base_url_var: None,
                    key_vars,
                    overrides,
                    user_args: words.user_args.to_vec(),
                    program_len: words.program_len,
                })
            }
        }
    }
}

/// The index just after the last run of `args` in `argv`, when `args` is not empty and is there.
fn after(argv: &[String], args: &[String]) -> Option<usize> {
    let n = args.len();
    if n == 0 || n > argv.len() {
        return None;
    }
    (0..=argv.len() - n)
        .rev()
        .find(|&i| argv[i..i + n] == *args)
        .map(|i| i + n)
}

#[cfg(test)]
mod tests;
