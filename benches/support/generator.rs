//! The Claude-like stream-json line generator shared by the pipeline and binary benches.
//!
//! Included with `#[path]` by each bench (benches are separate crates).

/// The body of the secret planted in 1% of the lines; it must never reach the log.
pub const SECRET: &str = "api03-Zx9TqL2mW8vR4kP7nB3cY6dF1gH5jK0sA-Qe_Uo";
/// An "environment" secret value, so the literal matcher is exercised too.
pub const ENV_SECRET: &str = "hunter2-correct-horse-battery";
/// Bytes per generated chunk.
pub const CHUNK: usize = 64 * 1024;

/// Produces Claude stream-json lines in chunks from templates, patching a per-line counter in
/// place (formatting every line with `write!` would cost more than the pipeline itself).
pub struct Generator {
    /// How many lines to produce.
    pub lines: u64,
    templates: Vec<(Vec<u8>, Vec<usize>)>,
    produced: u64,
    /// Bytes produced so far.
    pub bytes: u64,
}

/// Stands for the 12 hex digits of the line number in a template.
const COUNTER: &str = "@@@@@@@@@@@@";

impl Generator {
    /// A generator of `lines` lines.
    pub fn new(lines: u64) -> Generator {
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
            lines,
            templates,
            produced: 0,
            bytes: 0,
        }
    }

    /// Refills `chunk` with about [`CHUNK`] bytes of lines; false when all lines are out.
    pub fn fill(&mut self, chunk: &mut Vec<u8>) -> bool {
        chunk.clear();
        while chunk.len() < CHUNK && self.produced < self.lines {
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
