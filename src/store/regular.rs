//! Opening the files of a session directory (and the sealing key) without ever blocking on one
//! that is not a regular file.
//!
//! Anything can turn up where oneshot keeps its files: an agent with write access, a user's
//! mistake, a chaos run. A FIFO in place of `oneshot.json` would block `open(2)` until some
//! process writes to it, which is forever; a device would be read without end. So a file is
//! checked before it is opened (a FIFO or a device is never opened at all), opened with
//! `O_NONBLOCK` (a FIFO swapped in between the check and the open then opens at once instead of
//! waiting), and checked again on the open descriptor, so what is read is what was checked.
//! `O_NONBLOCK` changes nothing for a regular file.

use std::fs::{self, File, FileType, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// A file where oneshot expected a regular file: the cause (inside an [`io::Error`]) of every
/// refusal here, so that the message names the file (the caller's context) and then this.
#[derive(Debug, thiserror::Error)]
#[error(
    "it is {kind}, not a regular file: something other than oneshot put it there; nothing was \
     read from it — remove it or move it away"
)]
pub(crate) struct NotRegular {
    /// What it is instead: "a FIFO (named pipe)", "a socket", …
    pub(crate) kind: &'static str,
}

/// Opens `path` for reading, following a symbolic link to a regular file.
pub(crate) fn open_read(path: &Path) -> io::Result<File> {
    precheck(fs::metadata(path))?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    check(file.metadata()?.file_type())?;
    Ok(file)
}

/// The whole file at `path` (see [`open_read`]).
pub(crate) fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_read(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The whole file at `path` as text (see [`open_read`]).
pub(crate) fn read_to_string(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    open_read(path)?.read_to_string(&mut text)?;
    Ok(text)
}

/// Opens `path` with `options` (which may create it) for a file oneshot writes: a symbolic link
/// there is refused too, since writing through it would change a file elsewhere.
pub(crate) fn open_own(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        meta => precheck(meta)?,
    }
    let file = options
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)?;
    check(file.metadata()?.file_type())?;
    Ok(file)
}

/// Whether `e` is a refusal of a file that is not regular.
pub(crate) fn is_not_regular(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<NotRegular>())
}

fn precheck(meta: io::Result<fs::Metadata>) -> io::Result<()> {
    check(meta?.file_type())
}

/// Regular, or the error saying what it is instead. A directory gets the error reading one
/// gives (`EISDIR`), so that callers that take a directory for "no file here" still do.
fn check(kind: FileType) -> io::Result<()> {
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "something else"
    };
    Err(io::Error::other(NotRegular { kind: what }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn mkfifo(path: &Path) {
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    }

    #[test]
    fn a_fifo_is_refused_at_once_for_reading_and_writing() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("oneshot.json");
        mkfifo(&fifo);
        let start = Instant::now();
        let e = read(&fifo).unwrap_err();
        assert!(is_not_regular(&e), "{e}");
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let e = open_own(
            &fifo,
            OpenOptions::new().read(true).write(true).create(true),
        )
        .unwrap_err();
        assert!(is_not_regular(&e), "{e}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn regular_files_read_and_links_are_followed_only_for_reading() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a");
        fs::write(&file, "text").unwrap();
        let link = dir.path().join("b");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_to_string(&link).unwrap(), "text");
        let e = open_own(&link, OpenOptions::new().append(true)).unwrap_err();
        assert!(e.to_string().contains("a symbolic link"), "{e}");
        // A directory reads as the system says it does.
        let e = read(dir.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory, "{e}");
        assert!(!is_not_regular(&e));
        // A file that is not there is created when asked.
        let new = dir.path().join("c");
        open_own(&new, OpenOptions::new().append(true).create(true)).unwrap();
        assert!(new.is_file());
    }

    #[test]
    fn a_device_is_refused_without_being_read() {
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
    }
}
