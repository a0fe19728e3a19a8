//! An agent's account as a terminal shows it: one line per entry — what it said, the tool it
//! ran, how that went — prefixed by its role, cut to the width; and its stderr a few lines at a
//! time (a stack trace is one event, not fifty lines). The running session, `oneshot log` and
//! `oneshot show` print through here.

use super::sanitize::clean;
use super::statusline::fit;
use oneshot::agent::Entry;
use oneshot::session::Role;
use unicode_width::UnicodeWidthStr;

/// How many lines of one burst of an agent's stderr are shown.
const BURST: usize = 3;

/// The SGR colour of a role's prefix: the worker cyan, the auditor magenta.
fn role_colour(role: Role) -> &'static str {
    match role {
        Role::Worker => "36",
        Role::Auditor => "35",
    }
}

/// `text` painted with `code` when `colour`, else as it is.
fn paint(code: &'static str, text: &str, colour: bool) -> String {
    if colour {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// One entry of `role`'s account as a line of at most `width` columns, after `[label] `
/// (the role, or `worker#2` in a log).
pub fn line(role: Role, label: &str, entry: &Entry, colour: bool, width: usize) -> String {
    let prefix = format!("[{label}] ");
    let room = width.saturating_sub(prefix.width()).max(10);
    // One line: a newline shows as ⏎ (before the cleaning, which would drop it).
    let one = |t: &str| clean(&t.replace('\n', "⏎")).into_owned();
    let (mark, code, rest) = match entry {
        Entry::Said { text } => ("", "", one(text)),
        Entry::Tool { name, input } => ("$", "1", format!("{} {}", one(name), one(input))),
        Entry::Outcome { ok: true, text } => ("  → ok", "32", one(text)),
        Entry::Outcome { ok: false, text } => ("  → failed", "31", one(text)),
        Entry::Error { message } => ("!", "31", one(message)),
        // A kind of entry newer than this renderer: its kind, so the line is not lost.
        other => ("?", "", format!("{other:?}")),
    };
    let sep = match (mark, rest.is_empty()) {
        ("", _) | (_, true) => "",
        ("$", false) | ("!", false) => " ",
        (_, false) => ": ",
    };
    let plain = format!("{mark}{sep}{rest}");
    let body = fit(&plain, room + 1).into_owned();
    let body = match body.strip_prefix(mark) {
        Some(after) if !mark.is_empty() => format!("{}{after}", paint(code, mark, colour)),
        _ => body,
    };
    format!("{}{body}", paint(role_colour(role), &prefix, colour))
}

/// The `[label] ` before a raw line of `role` (`--raw`, or a command's output), painted like an
/// entry's.
pub fn raw_prefix(role: Role, label: &str, colour: bool) -> String {
    paint(role_colour(role), &format!("[{label}] "), colour)
}

/// An agent's stderr, a burst at a time: the first [`BURST`] lines of each burst are shown,
/// the rest counted and said in one line when the burst ends (the next entry, the next state).
#[derive(Debug, Default)]
pub struct StderrBurst {
    shown: usize,
    hidden: usize,
}

impl StderrBurst {
    /// Whether the next stderr line of the burst is shown.
    pub fn show(&mut self) -> bool {
        if self.shown < BURST {
            self.shown += 1;
            true
        } else {
            self.hidden += 1;
            false
        }
    }

    /// The burst ended: the line that says what was left out, if anything was.
    pub fn end(&mut self, how_to_see: &str) -> Option<String> {
        let hidden = std::mem::take(&mut self.hidden);
        self.shown = 0;
        (hidden > 0).then(|| {
            format!(
                "… {hidden} more line{} on stderr ({how_to_see})",
                if hidden == 1 { "" } else { "s" }
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_fit_the_width_and_say_what_they_are() {
        let tool = Entry::Tool {
            name: "Bash".into(),
            input: format!("cat {}", "x".repeat(200)),
        };
        let l = line(Role::Worker, "worker", &tool, false, 40);
        assert!(l.starts_with("[worker] $ Bash cat xxx"), "{l}");
        assert_eq!(l.width(), 40, "{l}");
        assert!(l.ends_with('…'));
        let ok = Entry::Outcome {
            ok: true,
            text: "3 passed\n0 failed".into(),
        };
        assert_eq!(
            line(Role::Auditor, "auditor", &ok, false, 80),
            "[auditor]   → ok: 3 passed⏎0 failed"
        );
        let boom = Entry::Error {
            message: "boom".into(),
        };
        let coloured = line(Role::Worker, "worker", &boom, true, 80);
        assert_eq!(coloured, "\x1b[36m[worker] \x1b[0m\x1b[31m!\x1b[0m boom");
        let said = Entry::Said {
            text: "hi \x1b]0;title\x07there".into(),
        };
        assert_eq!(
            line(Role::Worker, "worker#2", &said, false, 80),
            "[worker#2] hi there"
        );
    }

    #[test]
    fn a_burst_of_stderr_is_cut_and_counted() {
        let mut b = StderrBurst::default();
        let shown: Vec<bool> = (0..5).map(|_| b.show()).collect();
        assert_eq!(shown, [true, true, true, false, false]);
        assert_eq!(
            b.end("--raw").as_deref(),
            Some("… 2 more lines on stderr (--raw)")
        );
        assert!(b.show());
        assert_eq!(b.end("--raw"), None);
    }
}
