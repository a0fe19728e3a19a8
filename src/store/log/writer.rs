//! Appending records to `oneshot-log.json`.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::handoff::Handoff;
use crate::pipeline::RecordSink;

/// Buffer size: large enough that the pipeline's stream of small records costs few syscalls.
const BUFFER: usize = 256 * 1024;

/// Appends JSON records, one per line, to the activity log. Records are buffered and handed
/// to the OS only in whole lines, so a reader polling the file sees a torn line only after a
/// crash. Call [`LogWriter::sync`] at every state transition so the log is durable up to there.
///
/// A buffer that fills up (output streaming) is written by a background thread while the next
/// one fills; an explicit [`LogWriter::flush`] waits for those writes, so when it returns
/// everything appended is in the file, in order.
#[derive(Debug)]
pub struct LogWriter {
    file: Arc<File>,
    path: PathBuf,
    /// Complete records not yet written.
    buf: Vec<u8>,
    /// The background writer, once a buffer filled up.
    handoff: Option<Handoff>,
    /// Told after each flush that wrote something: what a reader in this process (the job
    /// runner's shipper) waits on instead of polling the file.
    flushed: Arc<tokio::sync::Notify>,
}

impl LogWriter {
    /// Opens `path` for appending, creating it if needed. If the file does not end with `\n`
    /// (a record torn by a kill), a `\n` is written first so the next record starts its own line.
    pub fn open(path: impl AsRef<Path>) -> io::Result<LogWriter> {
        let path = path.as_ref().to_path_buf();
        // A FIFO in place of the log would block this open until someone reads it.
        let mut file = crate::store::regular::open_own(
            &path,
            OpenOptions::new().read(true).append(true).create(true),
        )?;
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
            file: Arc::new(file),
            path,
            buf: Vec::with_capacity(BUFFER),
            handoff: None,
            flushed: Arc::new(tokio::sync::Notify::new()),
        })
    }

    /// What is told after each flush that wrote records: a waiter learns that the file grew
    /// (a flush with nobody waiting leaves one wake-up for the next waiter).
    pub fn flushes(&self) -> Arc<tokio::sync::Notify> {
        self.flushed.clone()
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` as one line. It is serialised completely before it joins the buffer,
    /// so a record that fails to serialise leaves no half line behind.
    pub fn append<T: Serialize>(&mut self, record: &T) -> io::Result<()> {
        let start = self.buf.len();
        if let Err(e) = serde_json::to_writer(&mut self.buf, record) {
            self.buf.truncate(start);
            return Err(io::Error::other(e));
        }
        self.end_record()
    }

    /// Appends a record already encoded as one JSON document without a newline.
    pub fn append_raw(&mut self, json: &[u8]) -> io::Result<()> {
        self.append_encoded(|buf| buf.extend_from_slice(json))
    }

    /// Hands buffered records to the OS (dropping the writer does this too), so
    /// `oneshot log --follow` sees them.
    pub fn flush(&mut self) -> io::Result<()> {
        if let Some(handoff) = self.handoff.as_mut().filter(|h| h.in_flight() > 0) {
            // Writes are in flight: this buffer goes after them, in order.
            if !self.buf.is_empty() {
                let full = std::mem::take(&mut self.buf);
                self.buf = handoff.send(full)?;
            }
            handoff.wait()?;
            self.flushed.notify_one();
            return Ok(());
        }
        if !self.buf.is_empty() {
            let result = (&*self.file).write_all(&self.buf);
            // Even on error the buffer is dropped: part of it may be on disk already, and
            // writing it again would duplicate records (the reader tolerates the torn one).
            self.buf.clear();
            // One huge record must not keep a huge buffer alive for the rest of the run.
            if self.buf.capacity() > 4 * BUFFER {
                self.buf.shrink_to(BUFFER);
            }
            result?;
            self.flushed.notify_one();
        }
        Ok(())
    }

    /// Flushes and fsyncs: every record appended so far survives a crash.
    pub fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        self.file.sync_data()
    }

    /// Terminates the record just encoded and hands the buffer to the background writer once
    /// it is full.
    fn end_record(&mut self) -> io::Result<()> {
        self.buf.push(b'\n');
        if self.buf.len() >= BUFFER {
            let handoff = match &mut self.handoff {
                Some(h) => h,
                None => self.handoff.insert(Handoff::start(self.file.clone())?),
            };
            let full = std::mem::take(&mut self.buf);
            self.buf = handoff.send(full)?;
            if self.buf.capacity() < BUFFER {
                self.buf.reserve(BUFFER + BUFFER / 8);
            }
        }
        Ok(())
    }
}

/// The pipeline's log stage writes activity records straight into the buffer.
impl RecordSink for LogWriter {
    fn append_encoded(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let start = self.buf.len();
        encode(&mut self.buf);
        debug_assert!(
            memchr::memchr(b'\n', &self.buf[start..]).is_none(),
            "a record is one line"
        );
        self.end_record()
    }
}

impl Drop for LogWriter {
    /// Buffered records reach the file even if the caller did not flush; an error here has no
    /// one to go to (the engine syncs explicitly wherever durability matters).
    fn drop(&mut self) {
        let _ = self.flush();
    }
}
