//! `job land --resolver AGENT|cmd:COMMAND`: the agent (or command) asked with the
//! `conflict-resolve` schema, in the job's worktree mid-rebase, to resolve the conflicts; its
//! report goes back to the library, which checks it against git before the rebase goes on.
//! An agent resolver edits files as a worker would: the job's policy's `permit` answers its
//! tool requests, or, when the job has no policy, the built-in rule that lets it edit inside
//! the worktree only.

use oneshot::ask::{Ask, Permits, Target};
use oneshot::job::Job;
use oneshot::job::landing::Resolver;
use oneshot::policy::{PolicyOptions, PolicyService};
use oneshot::process::Role;
use oneshot::schema::Registry;
use std::path::{Path, PathBuf};

/// A resolver asked through `oneshot::ask`.
pub struct AskResolver {
    target: Target,
    /// What a `[targets.NAME]` adds to the agent's environment.
    env: Vec<(String, String)>,
    /// oneshot's state directory, kept out of the resolver's reach.
    hidden: PathBuf,
    rt: tokio::runtime::Runtime,
}

impl AskResolver {
    /// The resolver `spec` names (given by `from`: `--resolver`, or the job's policy): an agent
    /// (`claude`, `codex:MODEL`), a `[targets.NAME]` of the oneshot.toml at or above `source`
    /// (or of the user's config.toml), or `cmd:COMMAND`.
    pub fn new(
        spec: &str,
        from: &str,
        source: &Path,
        state_dir: &Path,
    ) -> anyhow::Result<AskResolver> {
        let (target, env) = match spec.strip_prefix("cmd:") {
            Some(cmd) => (Target::Command(cmd.to_string()), Vec::new()),
            None => {
                let files = crate::cli::config::Files::load(source)?;
                crate::cli::ask::resolve(spec, &[], &files).map_err(|e| {
                    crate::cli::exit::usage(format!(
                        "the resolver {spec} ({from}): {e:#}; give an agent (claude, \
                         codex:MODEL…), a [targets.NAME] of oneshot.toml, or cmd:COMMAND"
                    ))
                })?
            }
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(AskResolver {
            target,
            env,
            hidden: state_dir.to_path_buf(),
            rt,
        })
    }
}

impl Resolver for AskResolver {
    fn resolve(
        &mut self,
        job: &Job,
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
        ask.env.clone_from(&self.env);
        ask.hidden = vec![self.hidden.clone()];
        ask.role = Role::Worker;
        if let Some(path) = &job.spec.policy {
            let policy = self
                .rt
                .block_on(PolicyService::start(
                    Some(path.clone()),
                    PolicyOptions::default(),
                ))
                .map_err(|e| {
                    format!(
                        "the job's policy {} does not load, so the resolver was not asked: {}; \
                         fix it (`oneshot policy check {}` says more) and land again",
                        path.display(),
                        oneshot::error::failure(&e),
                        path.display()
                    )
                })?;
            ask.permit = Some(Permits::for_ask(policy, &ask));
        }
        let answer = self
            .rt
            .block_on(oneshot::ask::ask(&ask))
            .map_err(|e| format!("the resolver failed: {e}"))?;
        for d in &answer.denied {
            errln!(
                "oneshot: land: refused the resolver's {} request: {}",
                d.tool,
                d.reason
            );
        }
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
