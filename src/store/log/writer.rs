//! Appending records to `oneshot-log.json`.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Buffer size: large enough that the pipeline's stream of small records costs few syscalls.
const BUFFER: usize = 64 * 1024;

/// Appends JSON records, one per line, to the activity log. Writes are buffered; call
/// [`LogWriter::sync`] at every state transition so the log is durable up to that point.
#[derive(Debug)]
pub struct LogWriter {
    out: BufWriter<File>,
    path: PathBuf,
    scratch: Vec<u8>,
}

impl LogWriter {
    /// Opens `path` for appending, creating it if needed. If the file does not end with `\n`
    /// (a record torn by a kill), a `\n` is written first so the next record starts its own line.
    pub fn open(path: impl AsRef<Path>) -> io::Result<LogWriter> {
        let path = path.as_ref().to_path_buf();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)?;
        let len = file.metadata()?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        Ok(LogWriter {
            out: BufWriter::with_capacity(BUFFER, file),
            path,
            scratch: Vec::new(),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` as one line. It is serialised completely before anything is written, so
    /// a record that fails to serialise leaves no half line behind.
    pub fn append<T: Serialize>(&mut self, record: &T) -> io::Result<()> {
        self.scratch.clear();
        serde_json::to_writer(&mut self.scratch, record).map_err(io::Error::other)?;
        self.out.write_all(&self.scratch)?;
        self.out.write_all(b"\n")
    }

    /// The fast path for records already encoded as one JSON document without a newline (the
    /// pipeline's activity records): written as is, plus `\n`.
    pub fn append_raw(&mut self, json: &[u8]) -> io::Result<()> {
        debug_assert!(
            memchr::memchr(b'\n', json).is_none(),
            "a record is one line"
        );
        self.out.write_all(json)?;
        self.out.write_all(b"\n")
    }

    /// Hands buffered records to the OS (dropping the writer does this too), so `oneshot log --follow` sees them.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and fsyncs: every record appended so far survives a crash.
    pub fn sync(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }
}
