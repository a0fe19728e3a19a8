//! How oneshot's errors speak: one voice for every error type in the library.
//!
//! # The convention
//!
//! - An error's `Display` is **its own message only**: a lowercase fragment, without a trailing
//!   period, that reads after "failed to …" and names the file or session it is about —
//!   `read policy /x/p.lua`, `lock session 1a2b…`, `find session `abc` under /s/sessions; run
//!   `oneshot list` to see the sessions there`. What to do next, when there is something to do,
//!   ends the message (or, when the error has a cause, the innermost message of the chain).
//! - The underlying error is its [`source`](std::error::Error::source), **never** also written
//!   into the message. So each cause appears exactly once when the chain is printed.
//! - Whoever turns an error into text for people prints the whole chain, joined by `": "`:
//!   the CLI with anyhow's `{e:#}` (as `oneshot: error: failed to …`), the library with
//!   [`chain`] and [`failure`] (for warnings, recorded reasons and log records).
//!
//! An error that carries a cause only as text (a `String` field, e.g. a Lua message) shows it in
//! its message: it has no source to print it a second time.

use std::error::Error;

/// The error and its causes, outermost first, joined by `": "` — what anyhow's `{:#}` prints.
///
/// ```
/// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
/// let e = oneshot::store::LogError::Read { path: "/x/log".into(), source: io };
/// assert_eq!(oneshot::error::chain(&e), "read /x/log: gone");
/// ```
pub fn chain(e: &(dyn Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// `failed to` and the [`chain`]: a complete sentence for a warning, a reason or a record.
pub fn failure(e: &(dyn Error + 'static)) -> String {
    format!("failed to {}", chain(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("read policy /x/p.lua")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn each_cause_is_printed_once_in_order() {
        let e = Outer(std::io::Error::from_raw_os_error(2));
        let text = chain(&e);
        assert_eq!(
            text,
            "read policy /x/p.lua: No such file or directory (os error 2)"
        );
        assert_eq!(failure(&e), format!("failed to {text}"));
    }
}
