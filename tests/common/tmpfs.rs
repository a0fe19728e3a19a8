//! A real small file system to fill up: a tmpfs of a given size, mounted for a test's life.
//!
//! Mounting needs root (CAP_SYS_ADMIN). Without it a test says it was skipped — and fails when
//! `CI` is set, where it must run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs of `size` mounted at `dir` for the test's life.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts it; `None` (after saying why) when this process may not mount.
    pub fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs(dir.to_path_buf())),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                    Err(e) => e.to_string(),
                };
                assert!(
                    std::env::var_os("CI").is_none(),
                    "cannot mount a tmpfs to fill: {why}"
                );
                eprintln!("skipped: cannot mount a tmpfs to fill ({why}); run as root");
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: a process of a failed test may still have a file open there.
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the file system holding `dir` with a file, leaving `room` bytes free (about: a
/// tmpfs counts whole pages); returns the file.
pub fn fill(dir: &Path, room: u64) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    loop {
        if let Err(e) = f.write_all(&chunk) {
            assert_eq!(e.raw_os_error(), Some(28), "filling: {e}"); // ENOSPC
            break;
        }
    }
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(room)).unwrap();
    path
}
