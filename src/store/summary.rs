//! The head of a state file: what a listing needs, read without the history.
//!
//! The state file writes its summary fields first (see `Wire` in `session/value.rs`), so a
//! reader that wants only those can stop a few hundred bytes in, where parsing the whole file
//! (the worker's prompt and output tails, up to 64 KiB each, and the history) costs a hundred
//! times more. [`SummaryReader`] reads a small block, parses the leading fields with a real
//! JSON parser (a task holding `}` or `"` is no problem), and reads more only when the head
//! is longer than the block.

use super::error::{StoreError, io_err};
use crate::machine::SessionState;
use crate::session::SCHEMA_VERSION;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// How much of a state file is read first; the head of a file with a task of a few KiB fits.
const FIRST_READ: usize = 8 * 1024;

/// The leading fields of a state file: what `oneshot list` shows and what `oneshot status`
/// needs to find the newest session.
///
/// Reading one checks the schema, the types of these fields and that the file is complete (it
/// ends with the object's closing `}`), not the history or the phase data after them: a file
/// damaged only there lists normally, and `oneshot status ID` or `resume` (which read the
/// whole file, [`SessionDir::read_state`](super::SessionDir::read_state)) report it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The session id (`oneshot_id`).
    pub id: String,
    /// The state (`state`).
    pub state: SessionState,
    /// The worker iteration in progress or last run (`iteration_count`).
    pub iteration: u32,
    /// The iteration budget in force (`max_iterations`).
    pub max_iterations: u32,
    /// Creation time, unix milliseconds (`created_ms`).
    pub created_ms: u64,
    /// Time of the last change, unix milliseconds (`updated_ms`).
    pub updated_ms: u64,
    /// The task as the user gave it (`task`).
    pub task: String,
    /// What the agents reported using (`spent`; zero in files written before it was a
    /// summary field).
    pub spent: crate::session::Spent,
}

/// Reads [`Summary`]s of state files, one after the other through one buffer.
#[derive(Debug, Default)]
pub struct SummaryReader {
    buf: Vec<u8>,
}

impl SummaryReader {
    /// A reader with an empty buffer.
    pub fn new() -> SummaryReader {
        SummaryReader::default()
    }

    /// The summary of the state file at `path`, or why it cannot be read: the same
    /// [`StoreError`]s as [`SessionDir::read_state`](super::SessionDir::read_state) (`Io`,
    /// `Corrupt`, `NewerSchema`, `OlderSchema`).
    pub fn read(&mut self, path: &Path) -> Result<Summary, StoreError> {
        // Never `File::open`: a FIFO put in place of a state file would block `list` forever.
        let mut file = super::regular::open_read(path).map_err(io_err("cannot read", path))?;
        let corrupt = |message: String| StoreError::Corrupt {
            path: path.display().to_string(),
            message,
        };
        let buf = &mut self.buf;
        buf.clear();
        let mut want = FIRST_READ;
        loop {
            let more = (want - buf.len()) as u64;
            let got = (&mut file)
                .take(more)
                .read_to_end(buf)
                .map_err(io_err("cannot read", path))?;
            // Less than asked for: the whole file is in `buf`.
            let whole = (got as u64) < more;
            let mut head = Head::default();
            let parsed =
                HeadSeed(&mut head).deserialize(&mut serde_json::Deserializer::from_slice(buf));
            if !head.settled {
                match parsed {
                    Err(e) if e.classify() == serde_json::error::Category::Eof && !whole => {
                        want = want.saturating_mul(2);
                        continue;
                    }
                    Err(e) => return Err(corrupt(e.to_string())),
                    // The visitor settles whenever it returns Ok.
                    Ok(()) => return Err(corrupt("unreadable".into())),
                }
            }
            match head.schema.unwrap_or(0) {
                SCHEMA_VERSION => {}
                found if found > SCHEMA_VERSION => {
                    return Err(StoreError::NewerSchema {
                        path: path.display().to_string(),
                        found,
                    });
                }
                found => {
                    return Err(StoreError::OlderSchema {
                        path: path.display().to_string(),
                        found,
                    });
                }
            }
            let summary = head.summary().map_err(corrupt)?;
            let last = if whole {
                buf.trim_ascii_end().last().copied()
            } else {
                last_byte(&file).map_err(io_err("cannot read", path))?
            };
            if last != Some(b'}') {
                return Err(corrupt(
                    "it does not end with the closing `}` (cut short?)".into(),
                ));
            }
            return Ok(summary);
        }
    }
}

/// The last byte of `file` that is not whitespace.
fn last_byte(file: &File) -> std::io::Result<Option<u8>> {
    let mut end = file.metadata()?.len();
    let mut block = [0u8; 256];
    while end > 0 {
        let n = end.min(block.len() as u64);
        let block = &mut block[..n as usize];
        file.read_exact_at(block, end - n)?;
        if let Some(&b) = block.trim_ascii_end().last() {
            return Ok(Some(b));
        }
        end -= n;
    }
    Ok(None)
}

/// The leading fields as far as they were read.
#[derive(Default)]
struct Head {
    schema: Option<u32>,
    id: Option<String>,
    state: Option<SessionState>,
    iteration: Option<u32>,
    max_iterations: Option<u32>,
    created_ms: Option<u64>,
    updated_ms: Option<u64>,
    spent: Option<crate::session::Spent>,
    task: Option<String>,
    /// The visitor is done: it has every field, or a schema other than this build's, or it
    /// reached the end of the object.
    settled: bool,
}

impl Head {
    fn full(&self) -> bool {
        self.schema.is_some()
            && self.id.is_some()
            && self.state.is_some()
            && self.iteration.is_some()
            && self.max_iterations.is_some()
            && self.created_ms.is_some()
            && self.updated_ms.is_some()
            && self.spent.is_some()
            && self.task.is_some()
    }

    fn done(&self) -> bool {
        self.schema.is_some_and(|s| s != SCHEMA_VERSION) || self.full()
    }

    fn summary(self) -> Result<Summary, String> {
        fn field<T>(v: Option<T>, name: &str) -> Result<T, String> {
            v.ok_or_else(|| format!("missing field `{name}`"))
        }
        Ok(Summary {
            id: field(self.id, "oneshot_id")?,
            state: field(self.state, "state")?,
            iteration: field(self.iteration, "iteration_count")?,
            max_iterations: field(self.max_iterations, "max_iterations")?,
            created_ms: field(self.created_ms, "created_ms")?,
            updated_ms: field(self.updated_ms, "updated_ms")?,
            task: field(self.task, "task")?,
            spent: self.spent.unwrap_or_default(),
        })
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    Schema,
    OneshotId,
    State,
    IterationCount,
    MaxIterations,
    CreatedMs,
    UpdatedMs,
    Spent,
    Task,
    #[serde(other)]
    Other,
}

/// Fills a [`Head`] from the top-level object and stops as soon as it has what it needs.
struct HeadSeed<'h>(&'h mut Head);

/// The error the visitor stops with once it is done; [`Head::settled`] tells it apart.
const STOP: &str = "stopped after the summary fields";

impl<'de> DeserializeSeed<'de> for HeadSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for HeadSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a oneshot state file (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let h = self.0;
        loop {
            // Decide only after the next key is read: a value is trusted once the parser has
            // seen what follows it (a number cut off at the end of the block looks whole).
            let key = map.next_key::<Field>()?;
            if h.done() {
                h.settled = true;
                return Err(de::Error::custom(STOP));
            }
            let Some(key) = key else { break };
            match key {
                // As `read_state` reads it: anything but a whole number is schema 0.
                Field::Schema => {
                    let v: serde_json::Value = map.next_value()?;
                    h.schema = Some(v.as_u64().unwrap_or(0) as u32);
                }
                Field::OneshotId => h.id = Some(map.next_value()?),
                Field::State => h.state = Some(map.next_value()?),
                Field::IterationCount => h.iteration = Some(map.next_value()?),
                Field::MaxIterations => h.max_iterations = Some(map.next_value()?),
                Field::CreatedMs => h.created_ms = Some(map.next_value()?),
                Field::UpdatedMs => h.updated_ms = Some(map.next_value()?),
                Field::Spent => h.spent = Some(map.next_value()?),
                Field::Task => h.task = Some(map.next_value()?),
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        h.settled = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{NewSession, PolicyRef, Session};

    fn session(task: &str) -> Session {
        Session::new(
            NewSession {
                id: "00000000-0000-4000-8000-000000000001".into(),
                task: task.into(),
                workdir: "/work".into(),
                worker_cmd: "sh w.sh".into(),
                auditor_cmd: "sh a.sh".into(),
            },
            PolicyRef {
                path: None,
                hash: "builtin".into(),
                generation: 1,
                budget: None,
            },
            7,
            1_700_000_000_000,
        )
    }

    fn write(dir: &tempfile::TempDir, text: &[u8]) -> std::path::PathBuf {
        let path = dir.path().join("oneshot.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn summary_of(s: &Session) -> Summary {
        Summary {
            id: s.id.clone(),
            state: s.state(),
            iteration: s.iteration,
            max_iterations: s.max_iterations,
            created_ms: s.created_ms,
            updated_ms: s.updated_ms,
            task: s.task.clone(),
            spent: s.agents.spent,
        }
    }

    #[test]
    fn a_valid_file_gives_its_summary() {
        let tmp = tempfile::tempdir().unwrap();
        let s = session("fix the parser\nand the tests");
        let path = write(&tmp, &serde_json::to_vec_pretty(&s).unwrap());
        assert_eq!(SummaryReader::new().read(&path).unwrap(), summary_of(&s));
    }

    #[test]
    fn braces_and_quotes_in_the_task_are_read_as_text() {
        let tmp = tempfile::tempdir().unwrap();
        let task = "end the object early: }\" } \\\" {\"schema\": 99} ]}\n}";
        let s = session(task);
        let path = write(&tmp, &serde_json::to_vec(&s).unwrap());
        assert_eq!(SummaryReader::new().read(&path).unwrap().task, task);
    }

    #[test]
    fn a_long_head_is_read_in_several_blocks_and_the_tail_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let mut reader = SummaryReader::new();
        // A task longer than the first block, then a history far longer than the head.
        let task = "long ".repeat(FIRST_READ);
        let mut s = session(&task);
        s.history = vec![s.history[0].clone(); 5_000];
        let mut bytes = serde_json::to_vec_pretty(&s).unwrap();
        let path = write(&tmp, &bytes);
        assert_eq!(reader.read(&path).unwrap(), summary_of(&s));
        // The middle of the history is never parsed...
        let at = bytes.len() / 2
            + bytes[bytes.len() / 2..]
                .iter()
                .position(|&b| b == b'"')
                .unwrap();
        bytes[at] = b'#';
        let path = write(&tmp, &bytes);
        assert_eq!(reader.read(&path).unwrap(), summary_of(&s));
        // ...but a file cut short is noticed.
        let path = write(&tmp, &bytes[..bytes.len() - 10]);
        let e = reader.read(&path).unwrap_err().to_string();
        assert!(e.contains("corrupt") && e.contains("cut short"), "{e}");
    }

    #[test]
    fn a_number_cut_at_the_end_of_a_block_is_not_taken_whole() {
        let tmp = tempfile::tempdir().unwrap();
        // `created_ms` last, its first three digits the last bytes of the first block.
        let text = |pad: &str| {
            format!(
                "{{\"schema\": 2, \"oneshot_id\": \"a\", \"state\": \"CREATED\", \
                 \"iteration_count\": 0, \"max_iterations\": 3, \"updated_ms\": 5, \"task\": \"t\", \
                 \"pad\": \"{pad}\", \"created_ms\": 1234567}}"
            )
        };
        let before = text("").find("1234567").unwrap();
        let text = text(&"x".repeat(FIRST_READ - 3 - before));
        assert_eq!(&text[FIRST_READ - 3..FIRST_READ], "123");
        let path = write(&tmp, text.as_bytes());
        assert_eq!(
            SummaryReader::new().read(&path).unwrap().created_ms,
            1_234_567
        );
    }

    #[test]
    fn fields_in_another_order_are_found() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(
            &tmp,
            br#"{"task": "t", "history": [], "created_ms": 1, "updated_ms": 2, "state": "COMPLETED",
                 "max_iterations": 3, "iteration_count": 1, "oneshot_id": "x", "schema": 2}"#,
        );
        let s = SummaryReader::new().read(&path).unwrap();
        assert_eq!(
            (s.id.as_str(), s.state, s.created_ms),
            ("x", SessionState::Completed, 1)
        );
    }

    #[test]
    fn a_corrupt_file_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let mut reader = SummaryReader::new();
        for (text, says) in [
            (&b"{\"schema\": 2, \"state\": "[..], "EOF while parsing"),
            (b"", "EOF while parsing"),
            (b"garbage", "expected value"),
            (b"[1, 2]", "a oneshot state file"),
            (
                b"{\"schema\": 2, \"state\": \"NO_SUCH_STATE\"}",
                "unknown variant",
            ),
            (
                b"{\"schema\": 2, \"oneshot_id\": \"x\"}",
                "missing field `state`",
            ),
            (b"{\"schema\": 2, \"iteration_count\": -1}", "invalid value"),
            (b"{\"schema\": 2, \"task\": \"\xff\"}", "invalid unicode"),
        ] {
            let path = write(&tmp, text);
            let e = reader.read(&path).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, StoreError::Corrupt { .. }), "{msg}");
            assert!(msg.contains(says) && msg.contains("oneshot.json"), "{msg}");
        }
    }

    #[test]
    fn a_truncated_file_is_corrupt() {
        let tmp = tempfile::tempdir().unwrap();
        let mut reader = SummaryReader::new();
        let bytes = serde_json::to_vec_pretty(&session("t")).unwrap();
        for cut in [1, 2, 20, 200, bytes.len() / 2, bytes.len() - 1] {
            let path = write(&tmp, &bytes[..cut]);
            let e = reader.read(&path).unwrap_err();
            assert!(matches!(e, StoreError::Corrupt { .. }), "cut at {cut}: {e}");
        }
    }

    #[test]
    fn other_schemas_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let mut reader = SummaryReader::new();
        // A schema-1 file (no `updated_ms`, fields in the old order).
        let path = write(
            &tmp,
            br#"{"schema": 1, "oneshot_id": "x", "state": "COMPLETED", "iteration_count": 1,
                 "max_iterations": 3, "created_at": "", "updated_at": "", "created_ms": 1,
                 "task": "t", "history": []}"#,
        );
        assert!(matches!(
            reader.read(&path),
            Err(StoreError::OlderSchema { found: 1, .. })
        ));
        // A newer one, whatever follows its schema.
        let path = write(&tmp, b"{\"schema\": 3, \"state\": {\"new\": \"layout\"}, ");
        assert!(matches!(
            reader.read(&path),
            Err(StoreError::NewerSchema { found: 3, .. })
        ));
        // No schema at all reads as 0, as `read_state` has it.
        let path = write(&tmp, b"{}");
        assert!(matches!(
            reader.read(&path),
            Err(StoreError::OlderSchema { found: 0, .. })
        ));
    }

    #[test]
    fn a_missing_file_is_an_io_error() {
        let tmp = tempfile::tempdir().unwrap();
        let e = SummaryReader::new()
            .read(&tmp.path().join("oneshot.json"))
            .unwrap_err();
        assert!(
            matches!(&e, StoreError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
            "{e}"
        );
    }
}
