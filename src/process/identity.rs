//! Who a process is, recorded so that a later oneshot can recognise it after a crash.

use serde::{Deserialize, Serialize};

/// The identity of a spawned process group, persisted in the session state while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessIdentity {
    /// The direct child's pid.
    pub pid: i32,
    /// Its process group (equal to `pid`: every agent leads its own group).
    pub pgid: i32,
    /// On Linux, field 22 of `/proc/PID/stat` (clock ticks after boot). A pid that was recycled
    /// for another process has a different start time, so it is never mistaken for ours.
    /// `None` where the platform offers no cheap equivalent (macOS).
    pub start_time: Option<u64>,
}
