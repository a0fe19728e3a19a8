//! Raw chunks → lines, with a hard bound on how much of an unterminated line is held.

use memchr::memchr;

/// Default longest line kept whole (256 KiB); longer lines are emitted in partial pieces.
pub const DEFAULT_MAX_LINE: usize = 256 * 1024;

/// How far back from the bound a piece may be cut early to land on a non-token byte, so a
/// secret token straddling the cut is not split into two halves that no pattern recognises.
const CUT_WINDOW: usize = 1024;

/// Splits one stream's byte chunks into lines. Lines wholly inside a chunk are passed on
/// without copying; only the unterminated remainder of a chunk is buffered, and never more than
/// `max_line` bytes of it.
#[derive(Debug)]
pub(crate) struct Splitter {
    buf: Vec<u8>,
    max_line: usize,
    /// The current line has already been cut, so its last piece is partial too.
    cut: bool,
}

impl Splitter {
    /// A splitter holding at most `max_line` (at least 2 KiB) bytes of an unfinished line.
    pub(crate) fn new(max_line: usize) -> Splitter {
        Splitter {
            buf: Vec::new(),
            max_line: max_line.max(2 * CUT_WINDOW),
            cut: false,
        }
    }

    /// Capacity currently held for an unfinished line.
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// Feeds a chunk; `emit(piece, partial)` receives every complete line (without `\n` and a
    /// trailing `\r`) and every piece cut from an over-long line.
    pub(crate) fn push<E>(&mut self, mut bytes: &[u8], emit: &mut E) -> std::io::Result<()>
    where
        E: FnMut(&[u8], bool) -> std::io::Result<()>,
    {
        while let Some(nl) = memchr(b'\n', bytes) {
            let line = &bytes[..nl];
            bytes = &bytes[nl + 1..];
            if self.buf.is_empty() {
                let mut rest = line;
                while rest.len() > self.max_line {
                    let at = cut_point(rest, self.max_line);
                    emit(&rest[..at], true)?;
                    rest = &rest[at..];
                    self.cut = true;
                }
                emit(strip_cr(rest), std::mem::take(&mut self.cut))?;
            } else {
                self.append(line, emit)?;
                self.finish_line(emit)?;
            }
        }
        self.append(bytes, emit)
    }

    /// Emits the unterminated remainder, if any, as the last line of the stream.
    pub(crate) fn finish<E>(&mut self, emit: &mut E) -> std::io::Result<()>
    where
        E: FnMut(&[u8], bool) -> std::io::Result<()>,
    {
        if self.buf.is_empty() && !self.cut {
            return Ok(());
        }
        self.finish_line(emit)
    }

    /// Emits the buffered line (a newline was seen, or the stream ended) and resets.
    fn finish_line<E>(&mut self, emit: &mut E) -> std::io::Result<()>
    where
        E: FnMut(&[u8], bool) -> std::io::Result<()>,
    {
        let partial = std::mem::take(&mut self.cut);
        let line = strip_cr(&self.buf);
        // The last piece of a cut line can be empty (the cut fell just before `\n`).
        if !(partial && line.is_empty()) {
            emit(line, partial)?;
        }
        self.buf.clear();
        Ok(())
    }

    /// Buffers `data`, cutting a piece off the front whenever the buffer reaches `max_line`.
    fn append<E>(&mut self, mut data: &[u8], emit: &mut E) -> std::io::Result<()>
    where
        E: FnMut(&[u8], bool) -> std::io::Result<()>,
    {
        while !data.is_empty() {
            let room = self.max_line - self.buf.len();
            let take = data.len().min(room);
            self.reserve(take);
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == self.max_line && !data.is_empty() {
                let at = cut_point(&self.buf, self.max_line);
                emit(&self.buf[..at], true)?;
                self.buf.drain(..at);
                self.cut = true;
            }
        }
        Ok(())
    }

    /// Grows the buffer geometrically but never past `max_line`, so capacity stays bounded.
    fn reserve(&mut self, extra: usize) {
        let need = self.buf.len() + extra;
        if need > self.buf.capacity() {
            let target = need.max(self.buf.capacity() * 2).min(self.max_line);
            self.buf.reserve_exact(target - self.buf.len());
        }
    }
}

/// Where to cut `line` (longer than `max`): just after the last non-token byte within the last
/// [`CUT_WINDOW`] bytes before `max`, else at `max` moved back to a UTF-8 character boundary.
fn cut_point(line: &[u8], max: usize) -> usize {
    let from = max - CUT_WINDOW;
    if let Some(p) = line[from..max].iter().rposition(|&b| is_separator(b)) {
        return from + p + 1;
    }
    char_boundary_before(&line[..max])
}

/// The longest prefix length of `piece` that does not end inside a UTF-8 sequence (looking only
/// at `piece`, since the next byte may not have arrived yet).
fn char_boundary_before(piece: &[u8]) -> usize {
    let len = piece.len();
    for back in 1..=len.min(4) {
        let b = piece[len - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let width = match b {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        return if width > back { len - back } else { len };
    }
    len
}

/// Bytes that never occur inside a credential token (keys use alphanumerics, `-`, `_`, `.`,
/// `/`, `+`, `=`, `~`).
fn is_separator(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t'
            | b'\r'
            | b'"'
            | b'\''
            | b','
            | b';'
            | b'{'
            | b'}'
            | b'['
            | b']'
            | b'('
            | b')'
            | b'<'
            | b'>'
            | b'|'
            | b'`'
    )
}

/// The line without a trailing `\r` (CRLF line ends).
fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn split(chunks: &[&[u8]], max: usize) -> Vec<(String, bool)> {
        let mut s = Splitter::new(max);
        let mut got = Vec::new();
        let mut emit = |b: &[u8], p: bool| {
            got.push((String::from_utf8_lossy(b).into_owned(), p));
            Ok(())
        };
        for c in chunks {
            s.push(c, &mut emit).unwrap();
        }
        s.finish(&mut emit).unwrap();
        got
    }

    #[test]
    fn lines_across_chunks_and_crlf() {
        let got = split(&[b"ab", b"c\r", b"\nde\n\nf"], 4096);
        let want = [("abc", false), ("de", false), ("", false), ("f", false)];
        assert_eq!(got, want.map(|(s, p)| (s.to_owned(), p)));
    }

    #[test]
    fn long_line_cut_at_separator() {
        let mut line = vec![b'a'; 3000];
        line[2500] = b' ';
        line.push(b'\n');
        let got = split(&[&line], 2048);
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|(_, p)| *p));
        assert_eq!(got[0].0.len(), 2048);
        let mut line = vec![b'a'; 3000];
        line[1500] = b',';
        let got = split(&[&line[..1000], &line[1000..]], 2048);
        assert_eq!(got[0].0.len(), 1501);
        assert_eq!(got[1].0.len(), 1499);
    }

    #[test]
    fn cut_respects_utf8() {
        let line = "é".repeat(2000);
        let got = split(&[line.as_bytes()], 2049);
        assert!(got.iter().all(|(s, _)| !s.contains('\u{FFFD}')));
        assert_eq!(got.iter().map(|(s, _)| s.len()).sum::<usize>(), 4000);
    }

    proptest! {
        /// However the stream is chunked, the same lines come out, no piece exceeds the
        /// bound, and no byte is lost (only `\n` and the `\r` before it are dropped).
        #[test]
        fn chunking_does_not_matter(
            data in prop::collection::vec(prop::sample::select(b"ab \r\n,".to_vec()), 0..12_000),
            cuts in prop::collection::vec(0usize..12_000, 0..20),
        ) {
            let whole = split(&[&data], 2048);
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|c| *c < data.len()).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for c in cuts {
                chunks.push(&data[from..c]);
                from = c;
            }
            chunks.push(&data[from..]);
            let chunked = split(&chunks, 2048);
            prop_assert_eq!(&whole, &chunked);
            prop_assert!(whole.iter().all(|(s, _)| s.len() <= 2048));
            let kept: usize = whole.iter().map(|(s, _)| s.len()).sum();
            let newlines = data.iter().filter(|b| **b == b'\n').count();
            let crlf = data.windows(2).filter(|w| w == b"\r\n").count();
            // (A `\r` ending the stream without `\n` is dropped too.)
            let dropped = data.len() - kept;
            prop_assert!(dropped >= newlines && dropped <= newlines + crlf + 1);
        }
    }
}
