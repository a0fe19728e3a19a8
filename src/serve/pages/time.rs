//! Times as a page shows them: how long ago, by the store's clock where it answers, with the
//! exact UTC time beside it for the reader who needs it.

use std::time::{Duration, UNIX_EPOCH};

/// RFC 3339 with milliseconds, UTC.
pub(crate) fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// A span in one short word: `12s`, `5m`, `3h`, `2d`.
pub(crate) fn span(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

/// `<time>` for `ms`: how long before `now` (`5m ago`), the exact time as its tooltip and
/// machine-readable value.
pub(crate) fn ago(ms: u64, now: u64) -> String {
    let exact = rfc3339(ms);
    format!(
        "<time datetime=\"{exact}\" title=\"{exact}\">{} ago</time>",
        span(now.saturating_sub(ms))
    )
}

/// `<time>` for `ms` as the exact time.
pub(crate) fn at(ms: u64) -> String {
    let exact = rfc3339(ms);
    format!("<time datetime=\"{exact}\">{exact}</time>")
}

/// This machine's time: what ages are measured against when the store's clock does not
/// answer (leases are then judged *unknown*, never by this clock).
pub(crate) fn local_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
