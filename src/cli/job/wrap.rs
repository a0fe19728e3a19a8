//! Long text in `job show`, wrapped rather than cut: a reason may carry a panel's whole dissent
//! or a policy's explanation, and the end of it is often the part that matters.

use std::io::IsTerminal;

/// Columns text is wrapped to when stdout is not a terminal (a pipe, a file, a test).
const PIPE_WIDTH: usize = 100;

/// The width to wrap stdout's text to: the terminal's, or [`PIPE_WIDTH`].
pub(crate) fn width() -> usize {
    let out = std::io::stdout();
    if !out.is_terminal() {
        return PIPE_WIDTH;
    }
    terminal_size::terminal_size_of(out).map_or(PIPE_WIDTH, |(w, _)| usize::from(w.0))
}

/// `text` on one line or more: the first after `head` (which it shares), the others indented
/// by `indent` spaces, none wider than `width` columns when a word allows. Whitespace is
/// folded and control sequences removed (a reason may quote an agent); nothing is cut — a
/// word longer than a line gets a line of its own.
pub(crate) fn wrap(head: &str, text: &str, indent: usize, width: usize) -> String {
    let flat = crate::cli::show::one_line(text, usize::MAX);
    let mut out = head.to_string();
    let mut col = visible_width(head);
    let mut first = true;
    for word in flat.split(' ').filter(|w| !w.is_empty()) {
        let len = word.chars().count();
        if first && col + len > width && col > indent {
            // The head fills the line: the text starts on the next.
            out.truncate(out.trim_end().len());
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
        } else if !first && col + 1 + len > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
        } else if !first {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += len;
        first = false;
    }
    out
}

/// Columns `s` takes on a terminal: its characters, less colour sequences (`ESC [ … m`).
fn visible_width(s: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (false, _) => n += 1,
            (true, 'm') => in_escape = false,
            (true, _) => {}
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wraps_at_words_and_keeps_every_one() {
        let text = "a panel auditor said retry: the parser rejects an empty input, and the \
                    error names no line; the tests do not cover either";
        let out = wrap("  reason:   ", text, 12, 40);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 2, "{out}");
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{out}");
        assert!(lines[1..].iter().all(|l| l.starts_with("            ")));
        let words: Vec<&str> = out.split_whitespace().skip(1).collect();
        assert_eq!(words.join(" "), text);
    }

    #[test]
    fn a_head_that_fills_the_line_puts_the_text_below_it() {
        let out = wrap("a long head  ", "(why)", 2, 14);
        assert_eq!(out, "a long head\n  (why)");
    }

    #[test]
    fn colour_takes_no_columns() {
        let head = "\x1b[36mPENDING\x1b[0m ";
        assert_eq!(super::visible_width(head), 8);
        assert_eq!(wrap(head, "ab cd", 2, 13), format!("{head}ab cd"));
    }

    #[test]
    fn a_word_longer_than_a_line_is_not_cut() {
        let long = "x".repeat(50);
        let out = wrap("h: ", &format!("a {long} b"), 3, 20);
        assert_eq!(out, format!("h: a\n   {long}\n   b"));
    }
}
