//! The log's background writer: full buffers are written by a thread of their own while the
//! pipeline goes on encoding the next ones, and writeback to the disk starts during the run
//! instead of in one long sync at the end.
//!
//! The thread exists only once output streams (the first full buffer); a quiet session never
//! starts it, and it sleeps on its channel when there is nothing to write. Buffers go back and
//! forth, so a streaming run allocates a handful of them, not one per write.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Buffers in flight at most: a writer slower than the pipeline makes the pipeline wait (and
/// the agent's pipe fill) instead of growing memory.
const IN_FLIGHT: usize = 4;
/// A buffer grown past this (one huge record) is dropped after its write, not kept for reuse.
const KEEP_AT_MOST: usize = 1024 * 1024;
/// Writeback of the file is started after this many bytes were written since the last start.
const WRITEBACK_EVERY: u64 = 8 * 1024 * 1024;

/// A written buffer coming back, with how the write went.
type Done = (Vec<u8>, io::Result<()>);

/// The thread and both ends of its channels.
#[derive(Debug)]
pub(super) struct Handoff {
    to_thread: Option<SyncSender<Vec<u8>>>,
    back: Receiver<Done>,
    thread: Option<JoinHandle<()>>,
    in_flight: usize,
    /// Written buffers, cleared, ready for reuse.
    spare: Vec<Vec<u8>>,
}

impl Handoff {
    /// Starts the writer thread for `file`.
    pub(super) fn start(file: Arc<File>) -> io::Result<Handoff> {
        let (to_thread, inbox) = sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (done, back) = sync_channel::<Done>(IN_FLIGHT);
        let thread = std::thread::Builder::new()
            .name("oneshot-log".into())
            .spawn(move || write_loop(&file, &inbox, &done))?;
        Ok(Handoff {
            to_thread: Some(to_thread),
            back,
            thread: Some(thread),
            in_flight: 0,
            spare: Vec::new(),
        })
    }

    /// Buffers handed over and not yet written.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Hands `buf` to the thread and returns an empty buffer to go on with (a recycled one
    /// when there is one). Waits while [`IN_FLIGHT`] buffers are already queued. An error is
    /// that of an earlier write.
    pub(super) fn send(&mut self, buf: Vec<u8>) -> io::Result<Vec<u8>> {
        let mut result = Ok(());
        while self.in_flight >= IN_FLIGHT {
            result = result.and(self.collect_one());
        }
        // Non-blocking collection of anything already written: it keeps buffers recycling.
        while let Ok((b, r)) = self.back.try_recv() {
            self.recycle(b);
            result = result.and(r);
        }
        let sender = self.to_thread.as_ref().expect("sender lives until drop");
        sender
            .send(buf)
            .map_err(|_| io::Error::other("the log writer thread is gone"))?;
        self.in_flight += 1;
        result?;
        Ok(self.spare.pop().unwrap_or_default())
    }

    /// Waits until every buffer handed over is written; the first error, if any.
    pub(super) fn wait(&mut self) -> io::Result<()> {
        let mut result = Ok(());
        while self.in_flight > 0 {
            result = result.and(self.collect_one());
        }
        result
    }

    fn collect_one(&mut self) -> io::Result<()> {
        match self.back.recv() {
            Ok((b, r)) => {
                self.recycle(b);
                r
            }
            Err(_) => {
                self.in_flight = 0;
                Err(io::Error::other("the log writer thread is gone"))
            }
        }
    }

    fn recycle(&mut self, mut b: Vec<u8>) {
        self.in_flight -= 1;
        b.clear();
        if self.spare.len() < IN_FLIGHT && b.capacity() <= KEEP_AT_MOST {
            self.spare.push(b);
        }
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        // Closing the channel ends the thread once it has written what it holds.
        self.to_thread = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread: writes each buffer in order and sends it back; starts writeback as it goes.
fn write_loop(file: &File, inbox: &Receiver<Vec<u8>>, done: &SyncSender<Done>) {
    let mut since_writeback = 0u64;
    while let Ok(buf) = inbox.recv() {
        // `&File` writes: the engine's thread syncs the same file, never writes while buffers
        // are in flight (see `LogWriter`), so records stay in order.
        let result = (&*file).write_all(&buf);
        since_writeback += buf.len() as u64;
        if since_writeback >= WRITEBACK_EVERY {
            since_writeback = 0;
            start_writeback(file);
        }
        if done.send((buf, result)).is_err() {
            return;
        }
    }
}

/// Asks the kernel to start writing the file's dirty pages to disk without waiting, so the
/// sync at the next state change finds little left to do.
fn start_writeback(file: &File) {
    // SAFETY: a valid open descriptor; offset 0 and length 0 mean the whole file; the flag
    // only starts writeback. A failure (an odd file system) just leaves the work to the sync.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}
