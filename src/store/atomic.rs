//! Journal-grade file replacement: temp file, rename, fsync.
//!
//! Two steps, because they protect against different things. [`replace`] (a temp file renamed
//! over the old one) is what makes a file safe against oneshot dying at any instant (kill -9,
//! a panic): the file holds the old or the new content, never a mix. It costs no fsync, so the
//! engine can journal a state before every act without delaying the act. [`sync`] then makes
//! the replacement survive a power loss (fsync of the file and of its directory); the engine
//! calls it right after the act. A power loss kills the agents too, so the few milliseconds in
//! between can cost at most the newest state of a run that died with the machine; ext4 and
//! btrfs moreover write a renamed-over file's data before the rename itself.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Makes a replaced file durable: fsync the file, then its directory (where the rename lives).
pub fn sync(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()?;
    let dir = path.parent().unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}

/// Replaces `path` with `bytes` so that a crash of this process at any instant leaves either
/// the old or the new content, never a mix: a sibling temp file renamed over it. Not yet
/// durable against power loss: [`sync`] does that.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The sibling temp file [`replace`] writes first: `.NAME.tmp.PID`.
fn temp_path(path: &Path) -> std::path::PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.join(format!(".{name}.tmp.{}", std::process::id()))
}

/// Whether `name` is one of [`replace`]'s temp files (of any process).
pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with('.')
        && name
            .rsplit_once(".tmp.")
            .is_some_and(|(_, pid)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("oneshot.json");
        for bytes in [&b"one"[..], b"two"] {
            replace(&p, bytes).unwrap();
            sync(&p).unwrap();
        }
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}
