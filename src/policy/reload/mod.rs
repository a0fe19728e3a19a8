//! Hot reload of a running session's policy, with trust for files the agent could write.
//!
//! # How it works
//!
//! [`ReloadingPolicy`] holds the running [`PolicyHost`](crate::policy::PolicyHost) and a
//! [`PolicyWatcher`] on every file it was built from. The watcher watches parent directories
//! (editors save by rename), filters and debounces on its own thread, and only raises a flag.
//! At its next transition boundary the engine calls [`ReloadingPolicy::poll`]: the files are
//! hashed and compared with the running generation's; changed files that the
//! [`ReloadMode`] says need trust are checked against the [`TrustStore`]; a fresh host is
//! built and validated; only then is it swapped in and the generation bumped. A broken or
//! untrusted edit never touches the running host; it is reported once as a [`ReloadEvent`].

mod error;
mod event;
mod hub;
mod mode;
mod slot;
mod trust;
mod watcher;

pub use error::{ReloadError, TrustError};
pub use event::{ReloadEvent, ReloadOptions, Sources, UntrustedChange, Validate};
pub use mode::{ParseReloadModeError, ReloadMode};
pub use slot::ReloadingPolicy;
pub use trust::{TrustStore, sha256_hex};
pub use watcher::{ChangeSignal, DEBOUNCE, PolicyWatcher};

pub(crate) use trust::inside_workdir;
