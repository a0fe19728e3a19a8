//! How a run ended, and where its output goes while it runs.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::StopReason;
use crate::pipeline::Stream;

/// Receives a run's output as it arrives. Implemented by the pipeline (and by tests).
pub trait OutputSink {
    /// One chunk (at most 64 KiB) read from `stream`; chunk boundaries are arbitrary.
    fn output(&mut self, stream: Stream, bytes: &[u8]);

    /// Called about once a second with the time since the last output, so a status line can
    /// refresh while the agent is silent.
    fn tick(&mut self, idle: Duration) {
        let _ = idle;
    }

    /// oneshot is about to stop the run for `reason`; called once, before the first signal,
    /// so the engine can journal the stop before it happens.
    fn stopping(&mut self, reason: StopReason) {
        let _ = reason;
    }
}

/// The end of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// The direct child's exit code, when it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended the direct child, when one did.
    pub signal: Option<i32>,
    /// Why oneshot stopped it; `None` means it exited on its own.
    pub stop: Option<StopReason>,
    /// From spawn to the end of `drive`.
    #[serde(with = "duration_ms")]
    pub duration: Duration,
}

impl RunOutcome {
    /// Exited on its own with code 0.
    pub fn success(&self) -> bool {
        self.stop.is_none() && self.exit_code == Some(0)
    }

    /// The reason to record: oneshot's stop reason, or [`StopReason::ExitCode`] when the
    /// process ended on its own (by a non-zero code, or a signal nobody here sent).
    pub fn reason(&self) -> StopReason {
        self.stop.unwrap_or(StopReason::ExitCode)
    }
}

/// Durations in state files are whole milliseconds, readable by people and by Lua.
mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
