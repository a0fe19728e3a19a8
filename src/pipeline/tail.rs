//! The bounded tail of a run's redacted output, for the verdict hook and the state file.

/// Default tail size: the last 64 KiB of output.
pub const DEFAULT_TAIL: usize = 64 * 1024;

/// Keeps the last `cap` bytes of the lines pushed into it, starting at a whole line where one
/// fits. Appending is amortised O(1): the buffer is compacted only once it holds `2 × cap`.
#[derive(Debug)]
pub(crate) struct Tail {
    buf: String,
    cap: usize,
}

impl Tail {
    /// An empty tail of `cap` bytes.
    pub(crate) fn new(cap: usize) -> Tail {
        Tail {
            buf: String::new(),
            cap: cap.max(1),
        }
    }

    /// Appends one line (a `\n` separates it from the next).
    pub(crate) fn push(&mut self, line: &str) {
        if line.len() > self.cap {
            // Only the end of a huge line can survive; keep exactly that.
            self.buf.clear();
            let mut from = line.len() - self.cap;
            while !line.is_char_boundary(from) {
                from += 1;
            }
            self.buf.push_str(&line[from..]);
            self.buf.push('\n');
            return;
        }
        if self.buf.len() + line.len() + 1 > 2 * self.cap {
            let start = self.start();
            self.buf.drain(..start);
        }
        self.buf.push_str(line);
        self.buf.push('\n');
    }

    /// The last `cap` bytes (fewer when that lets them start at a line), without the final `\n`.
    pub(crate) fn as_str(&self) -> &str {
        &self.buf[self.start()..self.end()]
    }

    /// End of the text, before the final `\n`.
    fn end(&self) -> usize {
        self.buf.len().saturating_sub(1)
    }

    /// Where the visible tail starts in `buf`.
    fn start(&self) -> usize {
        let end = self.end();
        if end <= self.cap {
            return 0;
        }
        let mut from = end - self.cap;
        if self.buf.as_bytes()[from - 1] == b'\n' {
            return from;
        }
        let window = &self.buf.as_bytes()[from..end];
        // Skip the cut line's remainder unless it is the only line in the window.
        if let Some(nl) = memchr::memchr(b'\n', window)
            && nl + 1 < window.len()
        {
            return from + nl + 1;
        }
        while !self.buf.is_char_boundary(from) {
            from += 1;
        }
        from
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_whole_last_lines() {
        let mut t = Tail::new(10);
        for l in ["first line", "abc", "defg", "hi"] {
            t.push(l);
        }
        assert_eq!(t.as_str(), "defg\nhi");
        t.push("0123456789abcdef");
        assert_eq!(t.as_str(), "6789abcdef");
    }

    #[test]
    fn stays_bounded() {
        let mut t = Tail::new(100);
        for i in 0..10_000 {
            t.push(&format!("line {i}"));
        }
        assert!(t.buf.capacity() <= 400);
        assert!(t.as_str().ends_with("line 9999"));
        assert!(t.as_str().len() <= 100);
    }
}
