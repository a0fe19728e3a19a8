//! Making a directory of oneshot's own, readable by the user alone.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Creates `dir` and whichever of its parents are missing, each private to the user (0700).
/// A directory that exists already keeps its mode: the key may be put in a shared one
/// (`ONESHOT_KEY_FILE=/tmp/k/key`), and closing `/tmp` to everyone is not oneshot's to do.
/// Used for the key's directories and for oneshot's own directories an agent is kept out of.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .filter(|d| !d.as_os_str().is_empty())
        .take_while(
            |d| matches!(fs::symlink_metadata(d), Err(e) if e.kind() == io::ErrorKind::NotFound),
        )
        .collect();
    for d in missing.into_iter().rev() {
        match fs::DirBuilder::new().mode(0o700).create(d) {
            // The mode asked for went through the umask: set it whole, on ours only.
            Ok(()) => fs::set_permissions(d, fs::Permissions::from_mode(0o700))?,
            // Another oneshot made it meanwhile: its mode is its own.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
