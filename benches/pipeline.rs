//! Throughput and peak memory of the output pipeline (timestamp → redaction → NDJSON log).
//!
//! 1,000,000 Claude-like stream-json lines (~500 bytes, 1% carrying a secret) are generated on
//! the fly in 64 KiB chunks — never held in memory — and pushed through a [`Pipeline`] writing
//! `oneshot-log.json` to a temp file. Beside it, the same stream is copied plainly to a file (the
//! physical limit) and only generated (the generator's own cost). Each case runs in a child
//! process so its peak RSS (`VmHWM`) is its own. Run: `cargo bench --bench pipeline`.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use oneshot::pipeline::{Line, Pipeline, Redactor, RunMeta, Stream, now_ms};
use oneshot::store::LogWriter;

const LINES: u64 = 1_000_000;
const CHILD: &str = "ONESHOT_BENCH_CASE";

#[path = "support/generator.rs"]
mod generator;
use generator::{CHUNK, ENV_SECRET, Generator, SECRET};

fn main() {
    if let Ok(case) = std::env::var(CHILD) {
        child(&case);
        return;
    }
    let mut sizing = Generator::new(LINES);
    let (mut chunk, mut bytes) = (Vec::new(), 0u64);
    while sizing.fill(&mut chunk) {
        bytes += chunk.len() as u64;
    }
    println!(
        "pipeline bench: {LINES} Claude-like stream-json lines (mean {} bytes), 1% with a secret, 64 KiB chunks",
        bytes / LINES
    );
    println!(
        "{:<36} {:>12} {:>9} {:>10} {:>9}",
        "case", "lines/s", "MB/s in", "seconds", "peak MB"
    );
    for case in ["generate", "copy", "pipeline"] {
        let exe = std::env::current_exe().expect("bench executable path");
        let out = Command::new(exe)
            .env(CHILD, case)
            .output()
            .expect("run bench child");
        assert!(
            out.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
}

/// Runs one case in this (child) process and prints its table row.
fn child(case: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("oneshot-log.json");
    let mut generator = Generator::new(LINES);
    let mut chunk = Vec::with_capacity(CHUNK + 4096);
    let start = Instant::now();
    let mut stage = std::time::Duration::ZERO;
    let label = match case {
        "generate" => {
            let mut sink = 0usize;
            while generator.fill(&mut chunk) {
                sink = sink.wrapping_add(chunk.len());
            }
            std::hint::black_box(sink);
            "generate only"
        }
        "copy" => {
            let mut out = BufWriter::with_capacity(CHUNK, File::create(&path).expect("create"));
            while generator.fill(&mut chunk) {
                out.write_all(&chunk).expect("write");
            }
            out.flush().expect("flush");
            "generate + plain copy to file"
        }
        _ => {
            let redactor = Redactor::new(&[], vec![ENV_SECRET.to_owned()]).expect("redactor");
            let meta = RunMeta {
                role: "worker",
                iteration: 1,
                executor: "claude".to_owned(),
            };
            let mut pipeline = Pipeline::new(meta, Arc::new(redactor));
            let mut log = LogWriter::open(&path).expect("open log");
            let mut lines: Vec<Line> = Vec::with_capacity(256);
            while generator.fill(&mut chunk) {
                let t = Instant::now();
                pipeline
                    .push(Stream::Stdout, &chunk, now_ms(), &mut log, Some(&mut lines))
                    .expect("push");
                lines.clear();
                stage += t.elapsed();
            }
            let t = Instant::now();
            pipeline
                .finish(now_ms(), &mut log, Some(&mut lines))
                .expect("finish");
            log.flush().expect("flush");
            stage += t.elapsed();
            "generate + pipeline to log file"
        }
    };
    let secs = start.elapsed().as_secs_f64();
    let peak = vm_hwm_kb();
    let row = |label: &str, secs: f64| {
        println!(
            "{label:<36} {:>12.0} {:>9.0} {:>10.3} {:>9.1}",
            LINES as f64 / secs,
            generator.bytes as f64 / secs / 1e6,
            secs,
            peak as f64 / 1024.0
        );
    };
    row(label, secs);
    if case == "pipeline" {
        row("  of which pipeline push+finish", stage.as_secs_f64());
        verify(&path);
    }
}

/// Checks the log: one record per line, and no secret in its bytes.
fn verify(path: &std::path::Path) {
    let mut file = File::open(path).expect("open log");
    let mut buf = vec![0u8; 1 << 20];
    let keep = SECRET.len().max(ENV_SECRET.len());
    let (mut filled, mut records) = (0usize, 0u64);
    loop {
        let n = file.read(&mut buf[filled..]).expect("read log");
        if n == 0 {
            break;
        }
        let window = &buf[..filled + n];
        records += memchr::memchr_iter(b'\n', &window[filled..]).count() as u64;
        for secret in [SECRET, ENV_SECRET] {
            assert!(
                memchr::memmem::find(window, secret.as_bytes()).is_none(),
                "secret leaked"
            );
        }
        // Keep the end of the window so a secret straddling two reads is still seen.
        let from = window.len().saturating_sub(keep);
        buf.copy_within(from..filled + n, 0);
        filled = filled + n - from;
    }
    assert_eq!(records, LINES, "one record per line");
}

/// Peak resident set size of this process, from `/proc/self/status`.
fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
