//! A long-lived CLI speaking JSON lines on stdin/stdout (Claude's stream-json with its control
//! protocol, Codex's app-server, Gemini's ACP): send a message, wait for the line that answers it.
//! Stdout is read on a thread and handed over through a channel so every wait has a deadline.

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// A running CLI with piped stdin and stdout. Killed (its whole process group) when dropped.
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every stdout line so far, for failure messages.
    pub transcript: Vec<String>,
}

impl Session {
    pub fn spawn(mut cmd: Command) -> Session {
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn the agent CLI");
        let stdin = child.stdin.take();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Session {
            child,
            stdin,
            lines,
            transcript: Vec::new(),
        }
    }

    /// The CLI's pid, which is also its process group id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Writes one JSON line to the CLI's stdin.
    pub fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes one line as oneshot builds it (newline included) to the CLI's stdin.
    pub fn send_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).unwrap();
        stdin.flush().unwrap();
    }

    /// Closes stdin: the CLI's signal that no more input comes.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next JSON line that satisfies `want`; lines before it are skipped (and kept in the
    /// transcript). Panics with the transcript at the deadline or when stdout closes.
    pub fn wait_for(&mut self, timeout: Duration, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.transcript.push(line.clone());
                    if let Ok(v) = serde_json::from_str::<Value>(&line)
                        && want(&v)
                    {
                        return v;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no matching line within {timeout:?}\n{}",
                        self.transcript.join("\n")
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("stdout closed\n{}", self.transcript.join("\n"))
                }
            }
        }
    }

    /// Waits for the process to exit after stdin closed; its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "still running after {timeout:?}\n{}",
            self.transcript.join("\n")
        );
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this session created; no memory involved.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}
