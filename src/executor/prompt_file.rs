//! The prompt as a private file, for prompts of any size: `$ONESHOT_PROMPT_FILE`.
//!
//! argv and the environment cannot carry a large prompt (Linux caps one string at 128 KiB and
//! all of them together at `ARG_MAX`), stdin can but only once. A file can always be read, and
//! read again. It lives in a fresh directory of the system's temporary directory (never in the
//! workdir, where it would count as the worker's change), readable only by the user, and is
//! removed with the process's handle — or, when oneshot is killed before it can do that, by the
//! reaper (`shim.rs`) once the agent is gone.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::ExecError;

/// The prompt written to `<tmp>/oneshot-prompt-<uuid>/prompt.txt` (directory 0700, file 0600);
/// dropping it removes both.
#[derive(Debug)]
pub(super) struct PromptFile {
    dir: PathBuf,
    path: PathBuf,
}

impl PromptFile {
    /// Writes `prompt` into a new private file outside `workdir`.
    pub(super) fn write(prompt: &str, workdir: &Path) -> Result<PromptFile, ExecError> {
        let mut base = std::env::temp_dir();
        // A TMPDIR inside the workdir would make the file look like the worker's change.
        if base.starts_with(workdir) {
            base = PathBuf::from("/tmp");
        }
        let dir = base.join(format!("oneshot-prompt-{}", uuid::Uuid::new_v4().simple()));
        let fail = |path: &Path, source| ExecError::PromptFile {
            path: path.to_path_buf(),
            source,
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| fail(&dir, e))?;
        // From here on, dropping `file` removes the directory, whatever fails next.
        let file = PromptFile {
            path: dir.join("prompt.txt"),
            dir,
        };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file.path)
            .map_err(|e| fail(&file.path, e))?;
        f.write_all(prompt.as_bytes())
            .map_err(|e| fail(&file.path, e))?;
        Ok(file)
    }

    /// Where the prompt is.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The private directory it is in (removed with it).
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PromptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn private_outside_the_workdir_and_removed_on_drop() {
        let work = tempfile::tempdir().unwrap();
        let prompt = "é".repeat(100_000);
        let file = PromptFile::write(&prompt, work.path()).unwrap();
        let path = file.path().to_path_buf();
        assert!(!path.starts_with(work.path()));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), prompt);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        drop(file);
        assert!(!path.parent().unwrap().exists());
    }
}
