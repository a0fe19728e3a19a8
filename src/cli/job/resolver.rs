//! `job land --resolver AGENT|cmd:COMMAND`: the agent (or command) asked with the
//! `conflict-resolve` schema, in the job's worktree mid-rebase, to resolve the conflicts; its
//! report goes back to the library, which checks it against git before the rebase goes on.

use oneshot::agent::AgentSpec;
use oneshot::ask::{Ask, Target};
use oneshot::job::landing::Resolver;
use oneshot::schema::Registry;
use std::path::{Path, PathBuf};

/// A resolver asked through `oneshot::ask`.
pub struct AskResolver {
    target: Target,
    /// oneshot's state directory, kept out of the resolver's reach.
    hidden: PathBuf,
    rt: tokio::runtime::Runtime,
}

impl AskResolver {
    /// The resolver `spec` names: an agent (`claude`, `codex:MODEL`) or `cmd:COMMAND`.
    pub fn new(spec: &str, state_dir: &Path) -> anyhow::Result<AskResolver> {
        let target = match spec.strip_prefix("cmd:") {
            Some(cmd) => Target::Command(cmd.to_string()),
            None => Target::Agent(AgentSpec::parse(spec).map_err(|e| {
                crate::cli::exit::usage(format!(
                    "--resolver {spec}: {e}; give an agent (claude, codex:MODEL…) or \
                     cmd:COMMAND"
                ))
            })?),
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(AskResolver {
            target,
            hidden: state_dir.to_path_buf(),
            rt,
        })
    }
}

impl Resolver for AskResolver {
    fn resolve(
        &mut self,
        worktree: &Path,
        onto: &str,
        files: &[String],
    ) -> Result<Vec<(String, String)>, String> {
        let schema = Registry::builtin()
            .resolve("conflict-resolve")
            .map_err(|e| e.to_string())?;
        let prompt = format!(
            "A git rebase of this repository onto {onto} stopped on conflicts in: {}.\n\
             Resolve every conflict by editing those files (keep both sides' intent; leave no \
             conflict markers), change no other file, and do not run git commands. Then \
             report, for each conflicted file, what you did.",
            files.join(", ")
        );
        let mut ask = Ask::new(self.target.clone(), schema, prompt);
        ask.dir = worktree.to_path_buf();
        ask.hidden = vec![self.hidden.clone()];
        let answer = self
            .rt
            .block_on(oneshot::ask::ask(&ask))
            .map_err(|e| format!("the resolver failed: {e}"))?;
        let files = answer.value["files"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        Ok(files
            .iter()
            .map(|f| {
                let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
                (s("path"), s("action"))
            })
            .collect())
    }
}
