//! `--color auto|always|never`: whether oneshot's own messages on stderr are coloured.
//!
//! Colour is kept for what a reader scans for — state names and the `error:`/`warning:` word —
//! and decided once per process, before anything is printed. `auto` follows the conventions
//! every terminal tool shares: `NO_COLOR` (any non-empty value) turns it off, `CLICOLOR_FORCE`
//! (non-empty, not `0`) turns it on even through a pipe, and otherwise stderr must be a
//! terminal that is not `TERM=dumb`.

use oneshot::machine::SessionState;
use std::fmt;
use std::io::IsTerminal;
use std::sync::OnceLock;

/// When to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR says otherwise.
    Auto,
    /// Always, even into a pipe or file.
    Always,
    /// Never.
    Never,
}

/// Whether colour is on, and whether it was forced (`always`, `CLICOLOR_FORCE`) rather than
/// found to suit stderr.
static ON: OnceLock<(bool, bool)> = OnceLock::new();

/// Decides, once, whether colour is on; later calls change nothing.
pub fn init(choice: Option<ColorChoice>) {
    ON.get_or_init(|| {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        match choice.unwrap_or(ColorChoice::Auto) {
            ColorChoice::Always => (true, true),
            ColorChoice::Never => (false, false),
            ColorChoice::Auto if var("NO_COLOR").is_some() => (false, false),
            ColorChoice::Auto if var("CLICOLOR_FORCE").is_some_and(|v| v != "0") => (true, true),
            ColorChoice::Auto => {
                let tty = std::io::stderr().is_terminal() && !super::term::dumb_term();
                (tty, false)
            }
        }
    });
}

/// Whether colour is on (off until [`init`] says otherwise).
pub fn on() -> bool {
    ON.get().is_some_and(|&(on, _)| on)
}

/// Whether colour was asked for whatever the streams are (`--color always`, `CLICOLOR_FORCE`).
pub fn forced() -> bool {
    ON.get().is_some_and(|&(_, forced)| forced)
}

/// `text` in an SGR colour when colour is on, plain otherwise.
pub struct Paint<T>(pub &'static str, pub T);

impl<T: fmt::Display> fmt::Display for Paint<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if on() {
            write!(f, "\x1b[{}m{}\x1b[0m", self.0, self.1)
        } else {
            self.1.fmt(f)
        }
    }
}

/// A state name, coloured by what it means: green done, red failed, yellow paused or rejected,
/// cyan on the way.
pub fn state(s: SessionState) -> Paint<SessionState> {
    let code = match s {
        SessionState::Completed => "1;32",
        SessionState::Failed => "1;31",
        SessionState::Rejected | SessionState::Interrupted => "1;33",
        _ => "36",
    };
    Paint(code, s)
}

/// The word `error:`, bold red when colour is on.
pub fn error() -> Paint<&'static str> {
    Paint("1;31", "error:")
}

/// The word `warning:`, bold yellow when colour is on.
pub fn warning() -> Paint<&'static str> {
    Paint("1;33", "warning:")
}
