//! `oneshot saboteur MODE`: a fault-injecting agent (seed 003 §5.4). Used as a worker or an
//! auditor command, it fails the way real agents fail — valid JSON that means nothing, a
//! crash, a hang, a flood, garbage — so a policy, a pipeline or a job's handling of each can
//! be tried end to end, from the test suite or by hand.

use anyhow::Result;
use clap::{Args, ValueEnum};
use std::io::Write;
use std::time::Duration;

/// How the saboteur misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Valid JSON, nonsense content: a verdict that fits the schema and says "done" with a
    /// confident, meaningless reason (and, with --write, a file of nonsense as its "work").
    Nonsense,
    /// Dies by SIGSEGV after --after, as a crashing agent does.
    Crash,
    /// Prints nothing and never exits (--ignore-term: not even on SIGTERM, so only the KILL
    /// after the grace period stops it).
    Hang,
    /// Writes --bytes of junk lines as fast as it can, then exits 0.
    Flood,
    /// Prints bytes that are neither text nor JSON (invalid UTF-8, control sequences), exits 0.
    Garbage,
}

/// Options of `oneshot saboteur`.
#[derive(Debug, Args)]
pub struct SaboteurArgs {
    /// How to misbehave.
    #[arg(value_enum)]
    pub mode: Mode,
    /// Seed of the nonsense and garbage (the same seed, the same output).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How much `flood` writes, in bytes.
    #[arg(long, default_value_t = 50 * 1024 * 1024, value_name = "N")]
    pub bytes: u64,
    /// Wait this long before misbehaving (e.g. `2s`).
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub after: Option<Duration>,
    /// `hang`: ignore SIGTERM too.
    #[arg(long)]
    pub ignore_term: bool,
    /// `nonsense`: also write nonsense into this file (a worker's bad "work").
    #[arg(long, value_name = "FILE")]
    pub write: Option<std::path::PathBuf>,
}

/// A small deterministic generator: the output depends on the seed only.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        // xorshift64*; a zero state would stay zero.
        let mut x = self.0.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn words(&mut self, n: usize) -> String {
        const WORDS: [&str; 16] = [
            "synergy",
            "quantum",
            "banana",
            "refactor",
            "orthogonal",
            "moist",
            "blockchain",
            "paradigm",
            "teapot",
            "recursive",
            "lavender",
            "monad",
            "cheese",
            "holistic",
            "wobble",
            "latency",
        ];
        (0..n)
            .map(|_| WORDS[(self.next() % WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Runs the saboteur; returns only for the modes that exit.
pub fn run(a: SaboteurArgs) -> Result<i32> {
    if let Some(d) = a.after {
        std::thread::sleep(d);
    }
    let mut noise = Noise(a.seed);
    let mut out = std::io::stdout().lock();
    match a.mode {
        Mode::Nonsense => {
            let reason = noise.words(12);
            if let Some(file) = &a.write {
                std::fs::write(file, format!("{}\n", noise.words(40)))?;
            }
            let verdict = serde_json::json!({
                "verdict": "done",
                "reason": reason,
                "confidence": 0.99,
                "open_criteria": [],
            });
            writeln!(out, "{verdict}")?;
            Ok(0)
        }
        Mode::Crash => {
            out.flush()?;
            // The default action, whatever oneshot's environment set: a real crash.
            use nix::sys::signal::{SigHandler, Signal, signal};
            unsafe { signal(Signal::SIGSEGV, SigHandler::SigDfl) }?;
            nix::sys::signal::raise(Signal::SIGSEGV)?;
            Ok(139)
        }
        Mode::Hang => {
            if a.ignore_term {
                use nix::sys::signal::{SigHandler, Signal, signal};
                unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) }?;
            }
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        Mode::Flood => {
            let mut line = noise.words(10);
            line.push('\n');
            let mut left = a.bytes;
            while left > 0 {
                let n = (line.len() as u64).min(left) as usize;
                out.write_all(&line.as_bytes()[..n])?;
                left -= n as u64;
            }
            out.flush()?;
            Ok(0)
        }
        Mode::Garbage => {
            let mut bytes = Vec::with_capacity(4096);
            for _ in 0..4096 {
                bytes.push((noise.next() >> 56) as u8);
            }
            // A few sequences a terminal would act on, and a half JSON object.
            bytes.extend_from_slice(b"\x1b]0;pwned\x07\x1b[2J{\"verdict\": \"do");
            out.write_all(&bytes)?;
            out.flush()?;
            Ok(0)
        }
    }
}
