//! The file an answer schema is handed to an agent in (Codex's `--output-schema FILE`).
//!
//! It lives in the temp directory, not in the session's directory: a confined agent cannot see
//! oneshot's state at all (see `crate::confinement`). Its name is random and it is created
//! new, so nothing another user put in a shared temp directory is read or written through;
//! it is removed when dropped.

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A schema written to a private file for as long as this value lives.
#[derive(Debug)]
pub struct SchemaFile(PathBuf);

impl SchemaFile {
    /// Writes `text` to a new file (mode 0600) in the temp directory.
    pub fn write(text: &str) -> io::Result<SchemaFile> {
        let path =
            std::env::temp_dir().join(format!("oneshot-schema-{}.json", uuid::Uuid::new_v4()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let file_guard = SchemaFile(path);
        file.write_all(text.as_bytes())?;
        Ok(file_guard)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for SchemaFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_holds_the_text_privately_and_goes_with_its_value() {
        let f = SchemaFile::write("{\"type\":\"object\"}").unwrap();
        let path = f.path().to_path_buf();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"type\":\"object\"}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        drop(f);
        assert!(!path.exists());
    }
}
