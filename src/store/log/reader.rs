//! Reading `oneshot-log.json` back, tolerating a torn last line and corrupt lines.

use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The log could not be read at all (a bad line is a warning, not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// Opening or reading the file failed.
    #[error("read {}", path.display())]
    Read {
        /// The log file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

/// A whole log: its records in order, and one warning per skipped line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogRead {
    /// Every line that parsed as JSON.
    pub records: Vec<Value>,
    /// `oneshot-log.json:LINE: …` for each line that did not.
    pub warnings: Vec<String>,
}

/// What [`read_from`] found after an offset.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogChunk {
    /// Records of the complete lines after the offset.
    pub records: Vec<Value>,
    /// `oneshot-log.json@BYTE: …` for each complete line that did not parse.
    pub warnings: Vec<String>,
    /// Where the next poll starts: just past the last complete line.
    pub offset: u64,
}

/// Reads every record of the log at `path`. An unparsable last line (a record torn by a kill)
/// and unparsable lines in the middle are skipped, each with a warning naming its line.
pub fn read_log(path: impl AsRef<Path>) -> Result<LogRead, LogError> {
    let path = path.as_ref();
    let fail = |source| LogError::Read {
        path: path.to_path_buf(),
        source,
    };
    let name = file_name(path);
    // Never `File::open`: a FIFO in place of the log would block `oneshot log` forever.
    let mut reader = BufReader::new(crate::store::regular::open_read(path).map_err(fail)?);
    let mut read = LogRead::default();
    let mut buf = Vec::new();
    // A bad line's warning waits until we know whether it was the last line.
    let mut bad: Option<(usize, serde_json::Error)> = None;
    let mut number = 0;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf).map_err(fail)? == 0 {
            break;
        }
        number += 1;
        if buf.trim_ascii().is_empty() {
            continue;
        }
        if let Some((n, e)) = bad.take() {
            read.warnings.push(corrupt(&format!("{name}:{n}"), &e));
        }
        match serde_json::from_slice(&buf) {
            Ok(value) => read.records.push(value),
            Err(e) => bad = Some((number, e)),
        }
    }
    if let Some((n, _)) = bad {
        read.warnings.push(format!(
            "{name}:{n}: skipped a torn last line (oneshot was probably killed while writing)"
        ));
    }
    Ok(read)
}

/// Reads the complete lines after byte `offset`, for `oneshot log --follow`: poll again with
/// the returned offset. A last line without its `\n` is left for the next poll, since the
/// writer may be in the middle of it. An offset past the end finds nothing.
pub fn read_from(path: impl AsRef<Path>, offset: u64) -> Result<LogChunk, LogError> {
    let path = path.as_ref();
    let fail = |source| LogError::Read {
        path: path.to_path_buf(),
        source,
    };
    let name = file_name(path);
    let mut file = crate::store::regular::open_read(path).map_err(fail)?;
    let mut chunk = LogChunk {
        offset,
        ..LogChunk::default()
    };
    if file.metadata().map_err(fail)?.len() <= offset {
        return Ok(chunk);
    }
    file.seek(SeekFrom::Start(offset)).map_err(fail)?;
    let mut reader = BufReader::new(file);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(fail)?;
        if n == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        let at = chunk.offset;
        chunk.offset += n as u64;
        if buf.trim_ascii().is_empty() {
            continue;
        }
        match serde_json::from_slice(&buf) {
            Ok(value) => chunk.records.push(value),
            Err(e) => chunk.warnings.push(corrupt(&format!("{name}@{at}"), &e)),
        }
    }
    Ok(chunk)
}

/// The warning for an unparsable line that is not the last one.
fn corrupt(place: &str, e: &serde_json::Error) -> String {
    format!("{place}: skipped an unparsable line ({e})")
}

/// The file name used in warnings (`oneshot-log.json`).
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
