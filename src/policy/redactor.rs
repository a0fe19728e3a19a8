//! The redactor of a policy file, for what is written outside a session — a job's records and
//! branch, a `say` to a stored session, a token's record: the built-in patterns, the values of
//! secret-named environment variables, and the policy's own `redact` patterns — the same set a
//! session of that policy redacts with ([`crate::redact::Redacted`] is made by it).

use super::{PolicyHost, PolicyOptions};
use crate::redact::Redactor;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// The redactor for what a policy file `policy` governs (`None`: the built-in one). A policy
/// without patterns of its own shares one redactor per process; a policy that does not load
/// gets that one too — the load error is the step's to report, and the built-in patterns and
/// the environment's secrets are still redacted.
pub fn redactor(policy: Option<&Path>) -> Arc<Redactor> {
    static PLAIN: OnceLock<Arc<Redactor>> = OnceLock::new();
    let plain = || {
        Arc::clone(PLAIN.get_or_init(|| {
            Arc::new(
                Redactor::from_env(&[])
                    .unwrap_or_else(|_| Redactor::new(&[], Vec::new()).expect("built-ins compile")),
            )
        }))
    };
    let Some(path) = policy else {
        return plain();
    };
    // Loaded for its patterns and dropped: a runner holding a thousand steps must not hold a
    // thousand Lua states for this.
    let patterns = match PolicyHost::load(path, PolicyOptions::default()) {
        Ok(host) => host.redact_patterns().to_vec(),
        Err(_) => return plain(),
    };
    if patterns.is_empty() {
        return plain();
    }
    Redactor::from_env(&patterns).map_or_else(|_| plain(), Arc::new)
}
