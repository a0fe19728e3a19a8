//! Setting up the policy slot: hot reload, trust, and vetting a policy that changed while a
//! session was paused.

use super::{EngineError, Options};
use crate::policy::{
    PolicyHost, ReloadMode, ReloadOptions, ReloadingPolicy, TrustStore, inside_workdir, sha256_hex,
    test_file_for, validate_for_reload,
};
use crate::session::Session;
use crate::store::Store;

/// Wraps the policy in its reloading slot. A watcher that cannot start (e.g. the system's
/// inotify limit) must not stop the session: it runs without reload, and says so.
pub(super) fn reloading(
    policy: PolicyHost,
    generation: u32,
    session: &Session,
    store: &Store,
    opts: &Options,
) -> Result<(ReloadingPolicy, Option<String>), EngineError> {
    let trust = trust_store(opts, store);
    let make = |mode: ReloadMode| {
        let mut ro = ReloadOptions::new(session.workdir.clone(), trust.clone());
        ro.mode = mode;
        ro.policy = opts.policy_options.clone();
        // A reload must pass the policy's own tests before it may decide anything; saving the
        // test file re-runs a reload they refused.
        ro.validate = Box::new(|path, o| validate_for_reload(path, o.clone()));
        ro.sources = Box::new(|h| h.sources().to_vec());
        ro.gates = Box::new(|h| h.path().map(test_file_for).into_iter().collect());
        ro
    };
    let path = policy.path().map(|p| p.to_path_buf());
    match ReloadingPolicy::new(policy, generation, make(opts.reload)) {
        Ok(slot) => Ok((slot, None)),
        Err(e) => {
            let host = PolicyHost::load_or_builtin(path.as_deref(), opts.policy_options.clone())?;
            let slot = ReloadingPolicy::new(host, generation, make(ReloadMode::Off))?;
            Ok((
                slot,
                Some(format!(
                    "policy hot reload is off for this run: {}",
                    crate::error::failure(&e)
                )),
            ))
        }
    }
}

/// Said once when a session starts whose policy files an edit can only reach through trust
/// (inside the workdir, where an agent can write, or every file in `trusted` mode): so the first
/// edit is not a surprise refusal.
pub(super) fn trust_note(slot: &ReloadingPolicy, session: &Session) -> Option<String> {
    let files: Vec<String> = slot
        .watched()
        .into_iter()
        .filter(|f| match slot.mode() {
            ReloadMode::Trusted => true,
            ReloadMode::Auto => inside_workdir(f, &session.workdir),
            ReloadMode::Off => false,
        })
        .map(|f| shell_words::quote(&f.to_string_lossy()).into_owned())
        .collect();
    if files.is_empty() {
        return None;
    }
    let (inside, mode) = match slot.mode() {
        ReloadMode::Trusted => ("", "--policy-reload trusted"),
        _ => (
            " in the workdir, where an agent can write",
            "policy-reload auto",
        ),
    };
    Some(format!(
        "the policy is{inside}: an edit to it takes effect while the session runs only once you \
         trust it — `oneshot policy trust {}` after you save ({mode})",
        files.join(" ")
    ))
}

/// The trust store in force: the embedder's, else the user's, else one in the state dir (a
/// machine without a home directory still gets trust checks, scoped to these sessions).
pub(super) fn trust_store(opts: &Options, store: &Store) -> TrustStore {
    opts.trust.clone().unwrap_or_else(|| {
        TrustStore::from_env().unwrap_or_else(|_| TrustStore::at(store.root().join("trust.json")))
    })
}

/// A resume found the policy changed since the session last ran (its content hash, which the
/// sealed state file vouches for, differs). Every file of it — the policy and each module it
/// loads — that an agent could have written (inside the workdir; every file in `trusted` mode)
/// must be trusted by its current content, whichever of them changed.
pub(super) fn vet_changed_policy(
    session: &Session,
    files: &[std::path::PathBuf],
    trust: &TrustStore,
    mode: ReloadMode,
) -> Result<(), EngineError> {
    let mut untrusted = Vec::new();
    for path in files {
        let bytes = std::fs::read(path).map_err(|source| {
            EngineError::Store(crate::store::StoreError::Io {
                what: "read",
                path: path.display().to_string(),
                source,
            })
        })?;
        let inside = inside_workdir(path, &session.workdir);
        let needs_trust = match mode {
            ReloadMode::Trusted => true,
            ReloadMode::Auto | ReloadMode::Off => inside,
        };
        if needs_trust && !trust.is_trusted(path, &sha256_hex(&bytes)) {
            untrusted.push((path, inside));
        }
    }
    if untrusted.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = untrusted
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    let quoted: Vec<String> = untrusted
        .iter()
        .map(|(p, _)| shell_words::quote(&p.to_string_lossy()).into_owned())
        .collect();
    let inside = untrusted.iter().any(|(_, inside)| *inside);
    Err(EngineError::Refused {
        id: session.id.clone(),
        state: session.state(),
        why: format!(
            "its policy changed since it last ran and {} {} not trusted{}; if the change is \
             yours, run `oneshot policy trust {}` and resume again, or resume with --policy FILE",
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            if inside {
                " (in the workdir, where an agent can write)"
            } else {
                ""
            },
            quoted.join(" ")
        ),
    })
}
