//! What a reload check reports, and the options that decide it.

use super::mode::ReloadMode;
use super::trust::TrustStore;
use crate::policy::{PolicyError, PolicyHost, PolicyOptions};
use std::fmt;
use std::path::{Path, PathBuf};

/// Builds and validates a fresh host from the policy file; see [`ReloadOptions::validate`].
pub type Validate = Box<dyn Fn(&Path, &PolicyOptions) -> Result<PolicyHost, PolicyError>>;

/// Lists the files a host was built from; see [`ReloadOptions::sources`].
pub type Sources = Box<dyn Fn(&PolicyHost) -> Vec<PathBuf>>;

/// How a [`ReloadingPolicy`](super::ReloadingPolicy) decides, loads and watches.
pub struct ReloadOptions {
    /// When a changed file may be activated.
    pub mode: ReloadMode,
    /// The session's workdir: files inside it can be written by the worker, so in
    /// [`ReloadMode::Auto`] their edits need trust.
    pub workdir: PathBuf,
    /// Where trusted hashes are recorded.
    pub trust: TrustStore,
    /// Resource caps for every freshly loaded host.
    pub policy: PolicyOptions,
    /// Loads a candidate host. Default: [`PolicyHost::load`]; the engine passes a loader that
    /// also runs the policy's own tests, so a policy failing them is never activated.
    pub validate: Validate,
    /// The files a host depends on, all of which are watched. Default: the policy file only;
    /// with modules, the policy file plus every file it required.
    pub sources: Sources,
    /// Files that decide whether a changed policy may be activated, not what it decides (its
    /// test file, which `validate` runs): watched, so saving one re-runs a reload they refused,
    /// and never needing trust. Default: none.
    pub gates: Sources,
}

impl ReloadOptions {
    /// [`ReloadMode::Auto`], default caps, [`PolicyHost::load`], and the policy file alone.
    pub fn new(workdir: impl Into<PathBuf>, trust: TrustStore) -> ReloadOptions {
        ReloadOptions {
            mode: ReloadMode::Auto,
            workdir: workdir.into(),
            trust,
            policy: PolicyOptions::default(),
            validate: Box::new(|path, opts| PolicyHost::load(path, opts.clone())),
            sources: Box::new(|host| host.path().map(Path::to_path_buf).into_iter().collect()),
            gates: Box::new(|_| Vec::new()),
        }
    }
}

impl fmt::Debug for ReloadOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadOptions")
            .field("mode", &self.mode)
            .field("workdir", &self.workdir)
            .field("trust", &self.trust)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// A changed file that is waiting for `oneshot policy trust FILE` before it can be activated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UntrustedChange {
    /// The file as it is watched.
    pub file: PathBuf,
    /// The full sha256 of its new content (`sha256:` + 64 hex digits).
    pub hash: String,
}

/// The outcome of a reload check, one per thing the engine should record and show.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReloadEvent {
    /// A new generation is current.
    Reloaded {
        /// The new generation (the previous one + 1).
        generation: u32,
        /// The new host's [`PolicyHost::hash`].
        hash: String,
        /// The files whose change caused it.
        files: Vec<PathBuf>,
    },
    /// The changed files did not load or validate; the running generation stays.
    Failed {
        /// Why, as a sentence (`failed to load policy p.lua:3: …`), with `file:line` where it
        /// is known.
        error: String,
        /// The files that changed.
        files: Vec<PathBuf>,
        /// The generation that keeps running.
        kept_generation: u32,
    },
    /// A changed file needs trust before it is activated; the running generation stays.
    Untrusted {
        /// The file.
        file: PathBuf,
        /// The full sha256 of its new content.
        hash: String,
        /// What the user can do about it.
        hint: String,
    },
}

impl ReloadEvent {
    /// The activity log record type the engine writes for this event.
    pub fn record_type(&self) -> &'static str {
        match self {
            ReloadEvent::Reloaded { .. } => "policy_reload",
            ReloadEvent::Failed { .. } => "policy_reload_failed",
            ReloadEvent::Untrusted { .. } => "policy_untrusted",
        }
    }

    pub(super) fn untrusted(change: &UntrustedChange) -> ReloadEvent {
        let quoted = shell_words::quote(&change.file.to_string_lossy()).into_owned();
        ReloadEvent::Untrusted {
            file: change.file.clone(),
            hash: change.hash.clone(),
            hint: format!("run `oneshot policy trust {quoted}` to activate it"),
        }
    }
}

/// One line for the status line.
impl fmt::Display for ReloadEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReloadEvent::Reloaded {
                generation, hash, ..
            } => write!(f, "policy reloaded: generation {generation} ({hash})"),
            ReloadEvent::Failed {
                error,
                kept_generation,
                ..
            } => write!(
                f,
                "policy edit not activated, generation {kept_generation} keeps deciding: {error}"
            ),
            ReloadEvent::Untrusted { file, hint, .. } => write!(
                f,
                "policy change to {} not activated: {hint}",
                file.display()
            ),
        }
    }
}
