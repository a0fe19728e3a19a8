//! The per-run pipeline: raw chunks → lines → timestamp → redaction → log → parse → tail.

use std::borrow::Cow;
use std::io;
use std::sync::Arc;

use super::json::is_json_container;
use super::record::Encoder;
use super::redact::{REDACTED, Redactor};
use super::split::{DEFAULT_MAX_LINE, Splitter};
use super::tail::{DEFAULT_TAIL, Tail};
use super::{RecordSink, Stream, index};

/// A raw private-key block longer than this many lines is assumed to have lost its END marker;
/// redaction of whole lines stops there so one truncated key cannot blank out a whole run.
const MAX_KEY_BLOCK_LINES: u32 = 1024;

/// Who produced the output: goes into every activity record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunMeta {
    /// `"worker"` or `"auditor"`.
    pub role: &'static str,
    /// The session iteration, from 1.
    pub iteration: u32,
    /// Executor name (`"command"`, `"claude"`, …).
    pub executor: String,
}

/// One line of output after redaction, as handed back to the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Ingestion time, Unix epoch milliseconds.
    pub ts: u64,
    /// Which pipe it came from.
    pub stream: Stream,
    /// The redacted text, without the line end; invalid UTF-8 replaced by U+FFFD.
    pub text: String,
    /// A piece of a line longer than the pipeline's `max_line`; all pieces of such a line are
    /// partial and arrive in order.
    pub partial: bool,
}

impl Line {
    /// The parse stage: the line as a JSON value when it is a whole JSON object or array.
    pub fn json(&self) -> Option<serde_json::Value> {
        if self.partial || !is_json_container(&self.text) {
            return None;
        }
        serde_json::from_str(&self.text).ok()
    }
}

/// Redaction state of one stream: inside a private-key block printed over several lines.
#[derive(Debug, Default, Clone, Copy)]
struct KeyBlock {
    open: bool,
    lines: u32,
}

/// Everything a line passes through once it is split off; separate from the splitters so the
/// two can be borrowed at once.
#[derive(Debug)]
struct Stages {
    redactor: Arc<Redactor>,
    encoder: Encoder,
    key_block: [KeyBlock; 2],
    tail: Tail,
    /// stdout alone, kept for the auditor only: its answer (the verdict is read from it, never
    /// from stderr, where any tool may print anything). Nobody reads the worker's stdout alone,
    /// and a second copy of every byte costs a worker's throughput about a tenth.
    stdout_tail: Option<Tail>,
}

/// The synchronous output processor of one agent run. The engine feeds it the chunks it reads
/// from the process; it writes one activity record per line to the log and returns the
/// redacted lines. Memory is bounded whatever the output: at most `max_line` buffered per
/// stream, a 64 KiB tail (and the auditor's stdout alone), and whatever the caller leaves in `out`.
#[derive(Debug)]
pub struct Pipeline {
    splitters: [Splitter; 2],
    stages: Stages,
}

impl Pipeline {
    /// A pipeline for one run, with the default 256 KiB line bound.
    pub fn new(meta: RunMeta, redactor: Arc<Redactor>) -> Pipeline {
        Pipeline::with_max_line(meta, redactor, DEFAULT_MAX_LINE)
    }

    /// A pipeline whose lines longer than `max_line` bytes (at least 2 KiB) are cut into pieces.
    pub fn with_max_line(meta: RunMeta, redactor: Arc<Redactor>, max_line: usize) -> Pipeline {
        Pipeline {
            splitters: [Splitter::new(max_line), Splitter::new(max_line)],
            stages: Stages {
                redactor,
                encoder: Encoder::new(meta.role, meta.iteration, &meta.executor),
                key_block: [KeyBlock::default(); 2],
                tail: Tail::new(DEFAULT_TAIL),
                stdout_tail: (meta.role == "auditor").then(|| Tail::new(DEFAULT_TAIL)),
            },
        }
    }

    /// Processes a chunk read from `stream` at `now_ms` (Unix ms): every line it completes is
    /// redacted, logged to `log` and appended to `out` — unless `out` is `None`: then no line
    /// is built at all (nobody reads them), only logged.
    pub fn push(
        &mut self,
        stream: Stream,
        bytes: &[u8],
        now_ms: u64,
        log: &mut impl RecordSink,
        mut out: Option<&mut Vec<Line>>,
    ) -> io::Result<()> {
        let stages = &mut self.stages;
        self.splitters[index(stream)].push(bytes, &mut |piece, partial| {
            stages.line(stream, piece, partial, now_ms, log, out.as_deref_mut())
        })
    }

    /// End of the run: emits the unterminated last line of each stream, if any (into `out`
    /// as [`Pipeline::push`] does).
    pub fn finish(
        &mut self,
        now_ms: u64,
        log: &mut impl RecordSink,
        mut out: Option<&mut Vec<Line>>,
    ) -> io::Result<()> {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let stages = &mut self.stages;
            self.splitters[index(stream)].finish(&mut |piece, partial| {
                stages.line(stream, piece, partial, now_ms, log, out.as_deref_mut())
            })?;
        }
        Ok(())
    }

    /// The last 64 KiB of the redacted output of both streams, starting at a whole line when
    /// one fits, lines separated by `\n`.
    pub fn tail(&self) -> &str {
        self.stages.tail.as_str()
    }

    /// The last 64 KiB of the redacted stdout alone, like [`Pipeline::tail`]; kept for the
    /// auditor only (empty for the worker).
    pub fn stdout_tail(&self) -> &str {
        self.stages.stdout_tail.as_ref().map_or("", Tail::as_str)
    }

    /// Bytes currently held for unfinished lines (the capacity of both line buffers).
    pub fn buffered_bytes(&self) -> usize {
        self.splitters.iter().map(Splitter::buffered_bytes).sum()
    }
}

impl Stages {
    /// One line or piece through redaction, the log, the tail and into `out`.
    fn line(
        &mut self,
        stream: Stream,
        raw: &[u8],
        partial: bool,
        ts: u64,
        log: &mut impl RecordSink,
        out: Option<&mut Vec<Line>>,
    ) -> io::Result<()> {
        // `from_utf8` has an ASCII fast path; the lossy decoder walks byte by byte.
        let text = match std::str::from_utf8(raw) {
            Ok(valid) => Cow::Borrowed(valid),
            Err(_) => String::from_utf8_lossy(raw),
        };
        let text = self.redact(stream, &text);
        let encoder = &self.encoder;
        log.append_encoded(|buf| encoder.encode(buf, ts, stream, partial, &text))?;
        self.tail.push(&text);
        if stream == Stream::Stdout
            && let Some(t) = &mut self.stdout_tail
        {
            t.push(&text);
        }
        if let Some(out) = out {
            out.push(Line {
                ts,
                stream,
                text: text.into_owned(),
                partial,
            });
        }
        Ok(())
    }

    /// Redacts one line, carrying a raw private-key block across lines of the same stream.
    fn redact<'t>(&mut self, stream: Stream, text: &'t str) -> Cow<'t, str> {
        let block = &mut self.key_block[index(stream)];
        if block.open {
            block.lines += 1;
            match text.find("-----END ") {
                Some(at) if text[at..].contains("PRIVATE KEY") => {
                    *block = KeyBlock::default();
                    let after = end_of_marker(text, at);
                    let rest = self.redactor.redact(&text[after..]);
                    return Cow::Owned(format!("{REDACTED}{rest}"));
                }
                _ => {
                    if block.lines >= MAX_KEY_BLOCK_LINES {
                        *block = KeyBlock::default();
                    }
                    return Cow::Borrowed(REDACTED);
                }
            }
        }
        let (redacted, opens) = self.redactor.redact_line(text);
        if opens {
            *block = KeyBlock {
                open: true,
                lines: 0,
            };
        }
        redacted
    }
}

/// The byte just past the `-----END … PRIVATE KEY-----` marker starting at `at`.
fn end_of_marker(text: &str, at: usize) -> usize {
    let from = at + "-----END ".len();
    match text[from..].find("-----") {
        Some(dashes) => from + dashes + "-----".len(),
        None => text.len(),
    }
}
