//! Session files on disk: `oneshot.json`, `oneshot-log.json`, and the lock.

mod log;

pub use log::*;
