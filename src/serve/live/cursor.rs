//! Where a job page's stream stands: the store's own numbers. A job's transitions and its
//! sessions' log entries are each numbered per job with no gap (`crate::job::store`), so a
//! pair of them says exactly what a reader has seen; it travels as the SSE event id
//! (`T.E`), and a browser that reconnects sends it back as `Last-Event-ID`.

use std::fmt;

/// How many of a job's transitions, and up to which of its log entries, a reader has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cursor {
    /// Transitions seen: the job's history has this many (numbered 1…T).
    pub transitions: u64,
    /// The last log entry seen (entries are numbered from 1; 0 is none).
    pub entries: u64,
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.transitions, self.entries)
    }
}

impl Cursor {
    /// Reads `T.E`; `None` for anything else (a client's header is not trusted to be one).
    pub(crate) fn parse(s: &str) -> Option<Cursor> {
        let (t, e) = s.trim().split_once('.')?;
        Some(Cursor {
            transitions: t.parse().ok()?,
            entries: e.parse().ok()?,
        })
    }

    /// The cursor that has seen what either has (a reader ahead of a fresh server after a
    /// restart keeps its own).
    pub(crate) fn min(self, other: Cursor) -> Cursor {
        Cursor {
            transitions: self.transitions.min(other.transitions),
            entries: self.entries.min(other.entries),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_what_it_writes_and_nothing_else() {
        let c = Cursor {
            transitions: 3,
            entries: 170,
        };
        assert_eq!(c.to_string(), "3.170");
        assert_eq!(Cursor::parse("3.170"), Some(c));
        assert_eq!(Cursor::parse(" 0.0 "), Some(Cursor::default()));
        for bad in ["", "3", "3.", ".4", "a.b", "-1.2", "1.2.3"] {
            assert_eq!(Cursor::parse(bad), None, "{bad:?}");
        }
    }
}
