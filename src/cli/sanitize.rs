//! Agent output made safe for a terminal: an agent's line may carry escape sequences that would
//! retitle the user's window (OSC), move the cursor over oneshot's own lines, clear the screen,
//! or worse. What reaches the terminal is plain text and tabs, plus SGR colours when colour is
//! on; the log keeps the bytes the agent wrote.

/// Appends `text` to `out` without terminal control: escape sequences (CSI, OSC, DCS and the
/// other string sequences, two-byte escapes), their one-character C1 forms, and every other
/// control character but the tab are dropped. `keep_sgr` keeps colour sequences (`ESC [ … m`).
pub fn push_clean(out: &mut Vec<u8>, text: &str, keep_sgr: bool) {
    // Nearly every line is plain: one scan, one copy, no per-character work.
    if !any_suspicious(text.as_bytes()) {
        out.extend_from_slice(text.as_bytes());
        return;
    }
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\t' => out.push(b'\t'),
            '\x1b' => match chars.peek().map(|&(_, c)| c) {
                Some('[') => {
                    chars.next();
                    let end = skip_csi(&mut chars);
                    if keep_sgr && let Some(end) = end {
                        let seq = &text[at..end];
                        if seq.ends_with('m') && seq[2..seq.len() - 1].bytes().all(sgr_param) {
                            out.extend_from_slice(seq.as_bytes());
                        }
                    }
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                // nF escapes (`ESC ( B`) carry intermediates before the final character.
                Some(_) => {
                    while chars
                        .next_if(|&(_, c)| ('\x20'..='\x2f').contains(&c))
                        .is_some()
                    {}
                    chars.next();
                }
                None => {}
            },
            '\u{9b}' => {
                skip_csi(&mut chars);
            }
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => {}
            c => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// `text` without terminal control (no colours either), for oneshot's own lines that quote an
/// agent: a verdict's reason, a critique, a policy's message.
pub fn clean(text: &str) -> std::borrow::Cow<'_, str> {
    if !any_suspicious(text.as_bytes()) {
        return text.into();
    }
    let mut out = Vec::with_capacity(text.len());
    push_clean(&mut out, text, false);
    // Whole characters in, whole characters out.
    String::from_utf8_lossy(&out).into_owned().into()
}

/// Whether any byte of `bytes` is [`suspicious`]. Nearly every line is plain, so this is the
/// whole cost of cleaning it: blocks of 32 bytes are tested without an early exit inside, which
/// the compiler turns into vector compares (a byte at a time was a sixth of a fast stream's
/// main thread).
fn any_suspicious(bytes: &[u8]) -> bool {
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        let mut hit = false;
        for &b in block {
            hit |= suspicious(b);
        }
        if hit {
            return true;
        }
    }
    blocks.remainder().iter().any(|&b| suspicious(b))
}

/// A byte that may start something to drop: a C0 control other than the tab, DEL, or the lead
/// byte of U+0080–U+00BF (where the C1 controls are).
fn suspicious(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f || b == 0xc2
}

fn sgr_param(b: u8) -> bool {
    b.is_ascii_digit() || b == b';' || b == b':'
}

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

/// Skips a CSI sequence's parameters, intermediates and final byte; returns the end offset of
/// the sequence, or `None` when the line ends first (the rest is dropped).
fn skip_csi(chars: &mut Chars) -> Option<usize> {
    for (at, c) in chars.by_ref() {
        if ('\x40'..='\x7e').contains(&c) {
            return Some(at + 1);
        }
        if !('\x20'..='\x3f').contains(&c) {
            // Not a well-formed sequence: drop what was read, stop here.
            return None;
        }
    }
    None
}

/// Skips a string sequence (OSC, DCS, …) up to its terminator: BEL, `ESC \` or ST.
fn skip_string(chars: &mut Chars) {
    while let Some((_, c)) = chars.next() {
        match c {
            '\x07' | '\u{9c}' => return,
            '\x1b' => {
                chars.next_if(|&(_, c)| c == '\\');
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{any_suspicious, clean as clean_cow, push_clean, suspicious};

    #[test]
    fn the_block_scan_finds_what_the_byte_scan_finds() {
        for len in [0, 1, 31, 32, 33, 64, 100] {
            let plain = "a".repeat(len);
            assert!(!any_suspicious(plain.as_bytes()));
            for at in 0..len {
                for bad in [0x1b_u8, 0x7f, 0xc2, b'\n'] {
                    let mut b = plain.clone().into_bytes();
                    b[at] = bad;
                    assert_eq!(any_suspicious(&b), b.iter().any(|&x| suspicious(x)));
                    assert!(any_suspicious(&b), "{len} {at} {bad}");
                }
            }
        }
        assert!(!any_suspicious("tab\tis fine é ü".as_bytes()));
    }

    fn clean(text: &str, keep_sgr: bool) -> String {
        let mut out = Vec::new();
        push_clean(&mut out, text, keep_sgr);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_text_and_tabs_pass() {
        assert_eq!(clean("a\tb ünï 漢字 ©", false), "a\tb ünï 漢字 ©");
    }

    #[test]
    fn title_changes_and_screen_control_are_dropped() {
        assert_eq!(clean("a\x1b]0;pwned\x07b", false), "ab");
        assert_eq!(clean("a\x1b]2;pwned\x1b\\b", false), "ab");
        assert_eq!(clean("\x1b[2J\x1b[H\x1b[10;5Hx\x1b[?1049h", false), "x");
        assert_eq!(clean("x\ry\x08z\x07", false), "xyz");
        assert_eq!(clean("\x1bcreset\x1b(Bok", false), "resetok");
        assert_eq!(clean("a\u{9b}2Jb\u{9d}0;t\u{9c}c", false), "abc");
        assert_eq!(clean("cut \x1b[12", false), "cut ");
        assert_eq!(clean("cut \x1b]0;never ends", false), "cut ");
    }

    #[test]
    fn colours_stay_only_when_wanted() {
        let red = "\x1b[1;31mred\x1b[0m";
        assert_eq!(clean(red, true), red);
        assert_eq!(clean(red, false), "red");
        assert_eq!(clean("\x1b[2Jx\x1b[32mg", true), "x\x1b[32mg");
    }

    #[test]
    fn quoted_agent_text_loses_its_control_too() {
        assert_eq!(
            clean_cow("retry: \x1b]0;pwned\x07fix \x1b[31mit"),
            "retry: fix it"
        );
        assert!(matches!(clean_cow("plain"), std::borrow::Cow::Borrowed(_)));
    }
}
