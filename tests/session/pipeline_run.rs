//! The per-run pipeline against a real log file: splitting, bounds, redaction, record format.

use std::sync::Arc;

use oneshot::pipeline::{DEFAULT_MAX_LINE, Line, Pipeline, Redactor, RunMeta, Stream};
use oneshot::store::{LogWriter, read_log};
use serde_json::Value;

const TS: u64 = 1_700_000_000_123;

/// A pipeline writing to `oneshot-log.json` in a fresh temp dir.
struct Run {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    log: LogWriter,
    pipeline: Pipeline,
    out: Vec<Line>,
}

impl Run {
    fn new(literals: Vec<String>) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("oneshot-log.json");
        let log = LogWriter::open(&path).unwrap();
        let meta = RunMeta {
            role: "worker",
            iteration: 1,
            executor: "command".to_owned(),
        };
        let redactor = Arc::new(Redactor::new(&[], literals).unwrap());
        Run {
            _dir: dir,
            path,
            log,
            pipeline: Pipeline::new(meta, redactor),
            out: Vec::new(),
        }
    }

    fn push(&mut self, stream: Stream, bytes: &[u8]) {
        let Run {
            log, pipeline, out, ..
        } = self;
        pipeline.push(stream, bytes, TS, log, Some(out)).unwrap();
    }

    /// Finishes the run and returns the texts it produced and the log's bytes.
    fn finish(&mut self) -> (Vec<String>, String) {
        let Run {
            log, pipeline, out, ..
        } = self;
        pipeline.finish(TS + 1, log, Some(out)).unwrap();
        log.sync().unwrap();
        let texts = out.iter().map(|l| l.text.clone()).collect();
        (texts, std::fs::read_to_string(&self.path).unwrap())
    }
}

fn fake_key() -> String {
    format!("sk-ant-api03-{}", "Zx9TqL2mW8vR4kP7nB3c".repeat(3))
}

#[test]
fn lines_split_across_chunks_with_crlf_and_two_streams() {
    let mut run = Run::new(vec![]);
    run.push(Stream::Stdout, b"hel");
    run.push(Stream::Stderr, b"warn");
    run.push(Stream::Stdout, b"lo\r\nwor");
    run.push(Stream::Stderr, b"ing\n");
    run.push(Stream::Stdout, b"ld\n\nlast");
    let (texts, log) = run.finish();
    assert_eq!(texts, ["hello", "warning", "world", "", "last"]);
    let streams: Vec<Stream> = run.out.iter().map(|l| l.stream).collect();
    use Stream::{Stderr, Stdout};
    assert_eq!(streams, [Stdout, Stderr, Stdout, Stdout, Stdout]);
    assert!(run.out.iter().all(|l| !l.partial));
    assert_eq!(
        run.out[4].ts,
        TS + 1,
        "the unterminated last line is stamped at finish"
    );
    assert_eq!(log.lines().count(), 5);
    assert_eq!(run.pipeline.tail(), "hello\nwarning\nworld\n\nlast");
}

#[test]
fn a_100_mb_line_stays_bounded_and_comes_out_in_partial_pieces() {
    let mut run = Run::new(vec![]);
    let chunk = b"word ".repeat(64 * 1024 / 5);
    let total = 100 * 1024 * 1024;
    let mut pushed = 0;
    let mut max_buffered = 0;
    let mut piece_bytes = 0;
    let mut pieces = 0;
    while pushed < total {
        run.push(Stream::Stdout, &chunk);
        pushed += chunk.len();
        max_buffered = max_buffered.max(run.pipeline.buffered_bytes());
        for line in run.out.drain(..) {
            assert!(line.partial);
            assert!(line.text.len() <= DEFAULT_MAX_LINE);
            piece_bytes += line.text.len();
            pieces += 1;
        }
    }
    run.push(Stream::Stdout, b"end\n");
    pushed += 3;
    for line in run.out.drain(..) {
        assert!(line.partial, "the last piece of a cut line is partial too");
        piece_bytes += line.text.len();
        pieces += 1;
    }
    assert!(
        max_buffered <= 2 * DEFAULT_MAX_LINE,
        "buffered {max_buffered}"
    );
    assert_eq!(piece_bytes, pushed, "no byte lost or duplicated");
    assert!(pieces >= total / DEFAULT_MAX_LINE);
    assert!(run.pipeline.tail().len() <= 64 * 1024);
}

#[test]
fn a_secret_split_across_chunks_is_redacted() {
    let mut run = Run::new(vec![]);
    let line = format!("export KEY={}\n", fake_key());
    let (a, b) = line.as_bytes().split_at(20);
    run.push(Stream::Stdout, a);
    run.push(Stream::Stdout, b);
    let (texts, log) = run.finish();
    assert_eq!(texts, ["export KEY=sk-ant-[REDACTED]"]);
    assert!(!log.contains(&fake_key()));
}

#[test]
fn a_long_line_is_cut_between_tokens_not_inside_a_secret() {
    let mut run = Run::new(vec![]);
    // The key straddles the 256 KiB bound; the cut moves back to the space before it.
    let pad = "x".repeat(DEFAULT_MAX_LINE - 30);
    let line = format!("{pad} {} tail\n", fake_key());
    run.push(Stream::Stdout, line.as_bytes());
    let (texts, log) = run.finish();
    assert_eq!(texts.len(), 2);
    assert_eq!(texts[1], "sk-ant-[REDACTED] tail");
    assert!(!log.contains(&fake_key()));
    for record in log.lines() {
        assert!(record.contains(r#""stream":"stdout","partial":true,"data":""#));
        serde_json::from_str::<Value>(record).unwrap();
    }
}

#[test]
fn a_private_key_printed_over_lines_is_redacted_entirely() {
    let mut run = Run::new(vec![]);
    let body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun";
    let text = format!(
        "$ cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body}\nabc=\n-----END RSA PRIVATE KEY----- trailing\nafter\n"
    );
    // Line by line, the way `cat` output arrives.
    for line in text.split_inclusive('\n') {
        run.push(Stream::Stdout, line.as_bytes());
    }
    let (texts, log) = run.finish();
    assert_eq!(
        texts,
        [
            "$ cat id_rsa",
            "[REDACTED]",
            "[REDACTED]",
            "[REDACTED]",
            "[REDACTED]",
            "[REDACTED] trailing",
            "after"
        ]
    );
    assert!(!log.contains(body) && !log.contains("abc="));
}

#[test]
fn a_secret_in_a_json_line_is_redacted_and_the_line_embedded_raw() {
    let mut run = Run::new(vec!["hunter2-horse-staple".into()]);
    let line = serde_json::json!({
        "type": "user",
        "content": format!("ANTHROPIC_API_KEY={}\nDB_PASSWORD=hunter2-horse-staple", fake_key()),
    })
    .to_string();
    run.push(Stream::Stdout, format!("{line}\n").as_bytes());
    let (_, log) = run.finish();
    assert!(!log.contains(&fake_key()) && !log.contains("hunter2"));
    let record: Value = serde_json::from_str(log.trim_end()).unwrap();
    assert_eq!(
        record["data"]["content"],
        "ANTHROPIC_API_KEY=sk-ant-[REDACTED]\nDB_PASSWORD=[REDACTED]"
    );
    assert_eq!(run.out[0].json().unwrap(), record["data"]);
}

#[test]
fn secrets_never_reach_the_log_bytes() {
    let mut run = Run::new(vec!["literal-secret-value".into()]);
    let secrets = [
        fake_key(),
        format!("ghp_{}", "a1B2c3D4e5".repeat(4)),
        "AKIAIOSFODNN7EXAMPLE".to_owned(),
        "literal-secret-value".to_owned(),
    ];
    for (i, s) in secrets.iter().enumerate() {
        let stream = if i % 2 == 0 {
            Stream::Stdout
        } else {
            Stream::Stderr
        };
        run.push(
            stream,
            format!("line {i}: {s}\n{{\"k\":\"{s}\"}}\n").as_bytes(),
        );
    }
    let (_, log) = run.finish();
    for s in &secrets {
        assert!(!log.contains(s.as_str()), "{s} leaked");
        assert!(!run.pipeline.tail().contains(s.as_str()));
    }
    assert_eq!(read_log(&run.path).unwrap().records.len(), 8);
}

#[test]
fn activity_record_format() {
    let mut run = Run::new(vec![]);
    run.push(
        Stream::Stdout,
        b"{\"type\":\"system\",\"subtype\":\"init\"}\nplain \"text\"\n[1,2\n",
    );
    run.push(Stream::Stderr, b"warning: \xff bad utf8\n");
    let (_, log) = run.finish();
    insta::assert_snapshot!(log);
}

#[test]
fn json_parse_stage_only_for_whole_objects_and_arrays() {
    let mut run = Run::new(vec![]);
    run.push(Stream::Stdout, b"{\"a\":1}\n[1]\n42\n{broken\n");
    run.finish();
    let parsed: Vec<Option<Value>> = run.out.iter().map(Line::json).collect();
    assert_eq!(
        parsed,
        [
            Some(serde_json::json!({"a": 1})),
            Some(serde_json::json!([1])),
            None,
            None
        ]
    );
}
