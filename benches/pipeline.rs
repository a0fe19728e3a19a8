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
const CHUNK: usize = 64 * 1024;
const CHILD: &str = "ONESHOT_BENCH_CASE";
/// The body of the secret planted in 1% of the lines; it must never reach the log.
const SECRET: &str = "api03-Zx9TqL2mW8vR4kP7nB3cY6dF1gH5jK0sA-Qe_Uo";
/// An "environment" secret value, so the literal matcher is exercised too.
const ENV_SECRET: &str = "hunter2-correct-horse-battery";

fn main() {
    if let Ok(case) = std::env::var(CHILD) {
        child(&case);
        return;
    }
    let mut sizing = Generator::default();
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
    let mut generator = Generator::default();
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
                    .push(Stream::Stdout, &chunk, now_ms(), &mut log, &mut lines)
                    .expect("push");
                lines.clear();
                stage += t.elapsed();
            }
            let t = Instant::now();
            pipeline
                .finish(now_ms(), &mut log, &mut lines)
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

/// Produces Claude stream-json lines in chunks from templates, patching a per-line counter in
/// place (formatting every line with `write!` would cost more than the pipeline itself).
struct Generator {
    templates: Vec<(Vec<u8>, Vec<usize>)>,
    produced: u64,
    bytes: u64,
}

/// Stands for the 12 hex digits of the line number in a template.
const COUNTER: &str = "@@@@@@@@@@@@";

impl Default for Generator {
    fn default() -> Generator {
        let session = "aede5bb7-1f2a-485d-9ac6-b0e93ee90a5d";
        let c = COUNTER;
        let sources = [
            format!(
                r#"{{"type":"assistant","message":{{"id":"msg_a088f2932ef7{c}","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{{"type":"text","text":"Step {c}: I'll inspect the failing test and run the suite again to see what changed."}}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":100,"output_tokens":17,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}},"context_management":null}},"parent_tool_use_id":null,"session_id":"{session}","uuid":"704deb6d-070e-4bb1-be09-{c}"}}"#
            ),
            format!(
                r#"{{"type":"assistant","message":{{"id":"msg_51e60a723a12{c}","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{{"type":"tool_use","id":"toolu_6b2acf524cd8{c}","name":"Bash","input":{{"command":"cargo test --package oneshot -- pipeline::tests::case_{c}","description":"Run the pipeline tests"}}}}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":100,"output_tokens":1}}}},"parent_tool_use_id":null,"session_id":"{session}","uuid":"ca15171f-22e9-4192-915f-{c}"}}"#
            ),
            format!(
                r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_6b2acf524cd8{c}","type":"tool_result","content":"running 12 tests\ntest pipeline::split::tests::cut ... ok\ntest result: ok. 12 passed; 0 failed; 0 ignored; finished in 0.01s","is_error":false}}]}},"parent_tool_use_id":null,"session_id":"{session}","uuid":"25db60e7-186d-42fc-8aab-{c}","timestamp":"2026-11-22T04:01:06.788Z"}}"#
            ),
            format!(
                r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"The change in src/pipeline/run.rs keeps the buffer bounded while the redactor scans each line once; line {c} \"quoted\" — ünïcode ok, then the log record is appended."}}}},"session_id":"{session}","parent_tool_use_id":null,"uuid":"fb812221-99b5-4760-af6f-{c}"}}"#
            ),
            // The secret-bearing variant of the tool result (1% of all lines).
            format!(
                r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_6b2acf524cd8{c}","type":"tool_result","content":"HOME=/home/dev\nANTHROPIC_API_KEY=sk-ant-{SECRET}\nDB_PASSWORD={ENV_SECRET}\nPATH=/usr/bin","is_error":false}}]}},"parent_tool_use_id":null,"session_id":"{session}","uuid":"25db60e7-186d-42fc-8aab-{c}","timestamp":"2026-11-22T04:01:06.788Z"}}"#
            ),
        ];
        let templates = sources
            .iter()
            .map(|t| {
                let mut bytes = t.as_bytes().to_vec();
                bytes.push(b'\n');
                let at = memchr::memmem::find_iter(&bytes, COUNTER.as_bytes()).collect();
                (bytes, at)
            })
            .collect();
        Generator {
            templates,
            produced: 0,
            bytes: 0,
        }
    }
}

impl Generator {
    /// Refills `chunk` with about [`CHUNK`] bytes of lines; false when all lines are out.
    fn fill(&mut self, chunk: &mut Vec<u8>) -> bool {
        chunk.clear();
        while chunk.len() < CHUNK && self.produced < LINES {
            self.line(chunk);
            self.produced += 1;
        }
        self.bytes += chunk.len() as u64;
        !chunk.is_empty()
    }

    /// Appends line number `self.produced`.
    fn line(&self, out: &mut Vec<u8>) {
        let n = self.produced;
        let kind = if n % 100 == 42 { 4 } else { (n % 4) as usize };
        let (template, counters) = &self.templates[kind];
        let base = out.len();
        out.extend_from_slice(template);
        let mut digits = [0u8; 12];
        for (i, d) in digits.iter_mut().rev().enumerate() {
            *d = b"0123456789abcdef"[((n >> (4 * i)) & 0xf) as usize];
        }
        for at in counters {
            out[base + at..base + at + 12].copy_from_slice(&digits);
        }
    }
}
