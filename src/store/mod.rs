//! Session files on disk: `oneshot.json`, `oneshot-log.json`, and the lock.
//!
//! Layout: `<state-dir>/sessions/<id>/{oneshot.json, oneshot-log.json, lock, snapshot.json}`.

mod atomic;
mod dir;
mod error;
mod holder_signal;
mod inbox;
mod liveness;
mod location;
mod lock;
mod log;
mod private_dir;
mod prune;
pub(crate) mod regular;
mod say;
mod seal;
mod stop;
mod summary;

pub use dir::{Listed, SessionDir, Store};
pub use error::StoreError;
pub use holder_signal::signal_holder;
pub use inbox::{BadPost, Posted, remove_post};
pub use liveness::Liveness;
pub use location::default_state_dir;
pub use lock::{LockError, SessionLock, holder_alive, live_holder};
pub use log::*;
pub use prune::{Kept, PruneOptions, Pruned};
pub use say::{SayError, say};
pub use seal::SealError;
pub use stop::{StopError, Stopped, stop};
pub use summary::{Summary, SummaryReader};

pub(crate) use atomic::{replace, sync};
pub(crate) use private_dir::create_private_dir;
pub(crate) use seal::default_key_path;
