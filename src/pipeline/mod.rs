//! The output pipeline: timestamp → redact → NDJSON log → parse, one pass, bounded memory.
//!
//! The engine reads an agent's stdout and stderr (and runs the inactivity timer); every chunk
//! it reads goes into [`Pipeline::push`]. The pipeline splits chunks into lines (bounded: an
//! over-long line is cut into partial pieces), stamps them, redacts secrets with a shared
//! [`Redactor`] **before** anything is written, appends one activity record per line to
//! `oneshot-log.json` and hands the redacted [`Line`]s back, keeping bounded tails of the
//! output for the hooks and the state file: both streams (the worker's output, the evidence)
//! and stdout alone (the auditor's answer, which the verdict is read from).

mod json;
mod record;
mod redact;
mod redacted;
mod rules;
mod run;
mod sink;
mod split;
mod stream;
mod tail;

pub use redact::{MIN_LITERAL_LEN, REDACTED, RedactError, Redactor};
pub use redacted::{Redacted, SealError};
pub use run::{Line, Pipeline, RunMeta};
pub use sink::RecordSink;
pub use split::DEFAULT_MAX_LINE;
pub use stream::Stream;
pub use tail::DEFAULT_TAIL;

/// Array index of a stream, for per-stream state.
pub(crate) fn index(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
    }
}

/// Milliseconds since the Unix epoch, for callers that stamp lines with the real clock.
pub fn now_ms() -> u64 {
    let real = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    real.saturating_add_signed(clock_offset_ms())
}

/// `ONESHOT_CLOCK_OFFSET` (signed ms, read once): how far this process's idea of the time
/// is moved from the machine's — a fault injected to test what a fleet does when one
/// machine's clock is wrong (a PostgreSQL store's leases are judged by the database's clock,
/// so a runner whose clock runs ahead steals no live lease). 0 when unset or unreadable.
pub fn clock_offset_ms() -> i64 {
    static OFFSET: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *OFFSET.get_or_init(|| {
        std::env::var("ONESHOT_CLOCK_OFFSET")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    })
}
