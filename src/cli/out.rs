//! Writing to the terminal without ever panicking on a closed pipe.
//!
//! `println!` panics when stdout is gone (`oneshot list | head -1`), and `eprintln!` when
//! stderr is: a running session must never die of that (`oneshot … 2>&1 | head -1`), and a
//! reader should just stop. So command output goes through [`outln!`] — a reader that went
//! away ends the command quietly, with success — and diagnostics through [`errln!`], which
//! never fails. A session's own lines (the terminal reporter) ignore write errors: the agent's
//! output is in the log whatever happens to the terminal.
//!
//! Everything written here, and everything oneshot's diagnostics log (a policy's `print` and
//! `oneshot.log` included), is redacted first: built-in credential patterns and the values of
//! secret-looking environment variables never reach the terminal either.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::sync::OnceLock;

use oneshot::Redactor;

/// Command output, one line: `println!` that ends the process quietly (exit 0) when the reader
/// closed the pipe, and with exit 1 on any other write error.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::out::stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Command output without a newline; see [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::out::stdout(format_args!($($arg)*)) };
}

/// A diagnostic line on stderr that never panics, whatever happened to stderr.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::cli::out::stderr(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Diagnostics without a newline; see [`errln!`].
macro_rules! err {
    ($($arg:tt)*) => { $crate::cli::out::stderr(format_args!($($arg)*)) };
}

/// `text` without secrets (the built-in patterns and the environment's secret values).
pub fn redact(text: &str) -> Cow<'_, str> {
    static REDACTOR: OnceLock<Option<Redactor>> = OnceLock::new();
    match REDACTOR.get_or_init(|| Redactor::from_env(&[]).ok()) {
        Some(r) => r.redact(text),
        // Without a redactor (it cannot fail to build without policy patterns) nothing could
        // be checked: say so rather than risk printing a secret.
        None => Cow::Borrowed("[output withheld: the secret redactor could not be built]\n"),
    }
}

/// Writes command output; see [`outln!`].
pub fn stdout(args: fmt::Arguments) {
    let text = fmt::format(args);
    let mut out = io::stdout().lock();
    if let Err(e) = out
        .write_all(redact(&text).as_bytes())
        .and_then(|()| out.flush())
    {
        if e.kind() == io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        stderr(format_args!(
            "oneshot: error: failed to write the output: {e}\n"
        ));
        std::process::exit(super::exit::FAILED);
    }
}

/// Writes one line of command output that IS a secret the user asked to see — a dashboard
/// token `token create` shows once, a one-time sign-in link — unredacted: the one deliberate
/// exception to [`stdout`]'s rule (the redactor knows these secrets' shapes, so everywhere
/// else they are masked).
pub fn secret_line(text: &str) {
    let mut out = io::stdout().lock();
    if let Err(e) = out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
    {
        if e.kind() == io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        stderr(format_args!(
            "oneshot: error: failed to write the output: {e}\n"
        ));
        std::process::exit(super::exit::FAILED);
    }
}

/// Writes a diagnostic, ignoring failure (there is nowhere left to report it).
pub fn stderr(args: fmt::Arguments) {
    let text = fmt::format(args);
    let mut err = io::stderr().lock();
    let _ = err
        .write_all(redact(&text).as_bytes())
        .and_then(|()| err.flush());
}

/// The diagnostics' writer: each formatted event is redacted, then written to stderr.
pub struct RedactingStderr;

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        stderr(format_args!("{}", String::from_utf8_lossy(buf)));
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
