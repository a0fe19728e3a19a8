//! `--listen unix:PATH`: the server on a Unix socket, for a reverse proxy on the same machine
//! (no browser reaches a socket file). The socket is made with mode 0600, so only its user
//! (and root) can connect; a stale one a dead server left is replaced, a live one refused; it
//! is removed when the server stops.

use super::ServeError;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The socket file this server made, removed when dropped if it is still the same file.
#[derive(Debug)]
pub(crate) struct SocketFile {
    path: PathBuf,
    /// Its device and inode: a file put there by someone else since is not removed.
    id: (u64, u64),
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path)
            && (meta.dev(), meta.ino()) == self.id
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Binds `path`: refuses a live socket and anything not a socket; replaces a stale socket.
/// Must run on a tokio runtime.
pub(crate) fn bind(path: &Path) -> Result<(tokio::net::UnixListener, SocketFile), ServeError> {
    let fail = |source| ServeError::Socket {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(ServeError::NotASocket {
                path: path.to_path_buf(),
            });
        }
        // A socket file: someone answering on it is a live server; a refused connection
        // means its server is gone (the file outlives a killed process).
        Ok(_) => match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => {
                return Err(ServeError::SocketInUse {
                    path: path.to_path_buf(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                tracing::info!("replacing the stale socket {}", path.display());
                std::fs::remove_file(path).map_err(fail)?;
            }
            Err(e) => return Err(fail(e)),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(e)),
    }
    // Made 0600 from the start, not chmod-ed after: between a bind and a chmod anyone could
    // connect. The umask is the process's; `serve` creates no other file meanwhile.
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    let bound = std::os::unix::net::UnixListener::bind(path);
    nix::sys::stat::umask(old);
    let listener = bound.map_err(fail)?;
    let meta = std::fs::symlink_metadata(path).map_err(fail)?;
    let file = SocketFile {
        path: path.to_path_buf(),
        id: (meta.dev(), meta.ino()),
    };
    // The umask only takes bits away; say the mode outright.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(fail)?;
    listener.set_nonblocking(true).map_err(fail)?;
    let listener = tokio::net::UnixListener::from_std(listener).map_err(fail)?;
    Ok((listener, file))
}
