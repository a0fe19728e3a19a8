//! An agent's own user, mount and network namespaces (Linux): oneshot's key, trust store and
//! state masked, everything else as the user sees it, and a network of loopback alone whose
//! one way out is a listener that oneshot's proxy accepts on.
//!
//! # How it works
//!
//! Everything is planned in oneshot, where allocating is fine ([`Plan::new`], then
//! [`Plan::prepare`] turns it into C strings and a socket pair); the agent carries the plan
//! out between fork and exec ([`enter`]) with async-signal-safe system calls alone:
//!
//! 1. `unshare(CLONE_NEWUSER | CLONE_NEWNS [| CLONE_NEWNET])`, mapping its uid and gid to
//!    themselves (it sees its own ids, and files keep their owners);
//! 2. every mount made private, then the masks: an empty tmpfs over each hidden directory,
//!    `/dev/null` over each hidden file — after the paths that must stay reachable inside a
//!    hidden one (a job's worktree lies in the state directory) were cloned with `open_tree`,
//!    to be moved back into place on the mask and the mask made read-only;
//! 3. loopback brought up, and a TCP listener bound to `127.0.0.1:PORT` inside the new
//!    network namespace, its descriptor sent to oneshot over the socket pair (`SCM_RIGHTS`):
//!    oneshot accepts on it from the host's network, so no bridge process is needed, and every
//!    connection on it is this agent's;
//! 4. a second, nested user and mount namespace: the masks become locked (the kernel does not
//!    let a less privileged namespace unmount what a more privileged one mounted), and the
//!    agent holds no capability over its network namespace.
//!
//! Landlock is enforced after this as the second wall (`executor::confine`).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The port an agent's proxy listens on inside its own network namespace (each namespace has
/// its own loopback, so every agent can use the same one).
pub const AGENT_PROXY_PORT: u16 = 3128;

/// Why an agent's namespaces could not be planned or entered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NamespaceError {
    /// A path holds a NUL byte.
    #[error("the path {0} holds a NUL byte")]
    Nul(PathBuf),
    /// A system call in oneshot failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The system's error.
        source: std::io::Error,
    },
}

/// One step of the mount plan, carried out in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// Clone the tree at the path (with what is mounted below it) into slot N, before a mask
    /// hides it.
    Keep(PathBuf, usize),
    /// An empty tmpfs over a directory.
    MaskDir(PathBuf),
    /// `/dev/null` over a file.
    MaskFile(PathBuf),
    /// A directory made on a mask, where a kept tree goes back.
    Mkdir(PathBuf),
    /// The tree in slot N moved back to the path.
    Restore(usize, PathBuf),
    /// The mount at the path made read-only.
    ReadOnly(PathBuf),
}

/// What an agent's namespaces will be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The mount steps, in order.
    pub ops: Vec<Op>,
    /// Whether the agent gets a network namespace of its own (loopback and the proxy's
    /// listener alone).
    pub network: bool,
    /// Ports of the host's loopback the agent reaches at the same address inside its network
    /// namespace (its model API on a local server): a listener each, handed back with the
    /// proxy's.
    pub forwards: Vec<u16>,
}

impl Plan {
    /// The plan hiding `hidden` (files or directories; missing ones are skipped) while `keep`
    /// (the workdir, its git metadata) stays reachable even where it lies inside a hidden
    /// directory; a hidden path inside a kept one is hidden again.
    pub fn new(hidden: &[PathBuf], keep: &[PathBuf], network: bool) -> Plan {
        Plan::with_forwards(hidden, keep, network, Vec::new())
    }

    /// [`Plan::new`] with listeners for `forwards` (ports of the host's loopback) beside the
    /// proxy's, when the agent has a network namespace.
    pub fn with_forwards(
        hidden: &[PathBuf],
        keep: &[PathBuf],
        network: bool,
        mut forwards: Vec<u16>,
    ) -> Plan {
        forwards.retain(|p| *p != AGENT_PROXY_PORT && *p != 0);
        forwards.sort_unstable();
        forwards.dedup();
        forwards.truncate(MAX_FORWARDS);
        if !network {
            forwards.clear();
        }
        let real = |p: &PathBuf| std::fs::canonicalize(p).ok();
        let mut hidden: Vec<PathBuf> = hidden.iter().filter_map(real).collect();
        hidden.sort();
        hidden.dedup();
        let mut keep: Vec<PathBuf> = keep.iter().filter_map(real).collect();
        keep.sort();
        keep.dedup();
        // Outermost first: a hidden path inside another is masked with it, unless a kept path
        // lies between them.
        let inside = |p: &Path, of: &[PathBuf]| of.iter().any(|o| p != o && p.starts_with(o));
        let top: Vec<&PathBuf> = hidden.iter().filter(|h| !inside(h, &hidden)).collect();
        // A kept path needs restoring when a mask covers it; nested kept paths come back with
        // their parent's tree.
        let covered: Vec<PathBuf> = keep
            .iter()
            .filter(|k| top.iter().any(|h| k.starts_with(h) && *k != *h))
            .cloned()
            .collect();
        let restored: Vec<&PathBuf> = covered.iter().filter(|k| !inside(k, &covered)).collect();
        let mut ops = Vec::new();
        for (slot, k) in restored.iter().enumerate() {
            ops.push(Op::Keep(k.to_path_buf(), slot));
        }
        let mut masked_dirs = Vec::new();
        let mut mask = |ops: &mut Vec<Op>, h: &Path| {
            if h.is_dir() {
                ops.push(Op::MaskDir(h.to_path_buf()));
                masked_dirs.push(h.to_path_buf());
            } else {
                ops.push(Op::MaskFile(h.to_path_buf()));
            }
        };
        for h in &top {
            mask(&mut ops, h);
        }
        for (slot, k) in restored.iter().enumerate() {
            let Some(h) = top.iter().find(|h| k.starts_with(h)) else {
                continue;
            };
            // Every directory between the mask and the kept path, outermost first.
            let mut dirs: Vec<&Path> = k.ancestors().take_while(|a| a != h).collect();
            dirs.reverse();
            ops.extend(dirs.into_iter().map(|d| Op::Mkdir(d.to_path_buf())));
            ops.push(Op::Restore(slot, k.to_path_buf()));
        }
        // A hidden path inside a restored tree (the state dir inside a job's worktree) came
        // back with it: hidden again on it.
        for h in &hidden {
            if restored.iter().any(|k| h.starts_with(k) && h != *k) {
                mask(&mut ops, h);
            }
        }
        for d in &masked_dirs {
            ops.push(Op::ReadOnly(d.clone()));
        }
        Plan {
            ops,
            network,
            forwards,
        }
    }

    /// The plan in the form the child carries out: C strings, the maps' text, and the socket
    /// pair the listener comes back on.
    pub fn prepare(&self) -> Result<Prepared, NamespaceError> {
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes()).map_err(|_| NamespaceError::Nul(p.into()))
        };
        let mut ops = Vec::with_capacity(self.ops.len());
        for op in &self.ops {
            ops.push(match op {
                Op::Keep(p, n) => RawOp::Keep(c(p)?, *n),
                Op::MaskDir(p) => RawOp::MaskDir(c(p)?),
                Op::MaskFile(p) => RawOp::MaskFile(c(p)?),
                Op::Mkdir(p) => RawOp::Mkdir(c(p)?),
                Op::Restore(n, p) => RawOp::Restore(*n, c(p)?),
                Op::ReadOnly(p) => RawOp::ReadOnly(c(p)?),
            });
        }
        let slots = ops.iter().filter(|o| matches!(o, RawOp::Keep(..))).count();
        if slots > MAX_SLOTS {
            return Err(NamespaceError::Io {
                what: "plan the agent's mounts",
                source: std::io::Error::other(format!(
                    "{slots} paths to keep inside hidden ones; at most {MAX_SLOTS}"
                )),
            });
        }
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let pair = if self.network {
            let mut fds = [-1; 2];
            // SAFETY: socketpair writes two descriptors into the array.
            let r = unsafe {
                libc::socketpair(
                    libc::AF_UNIX,
                    libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                    0,
                    fds.as_mut_ptr(),
                )
            };
            if r == -1 {
                return Err(NamespaceError::Io {
                    what: "make the socket pair an agent's listener comes back on",
                    source: std::io::Error::last_os_error(),
                });
            }
            // SAFETY: both descriptors were just made and are owned here alone.
            Some(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
        } else {
            None
        };
        Ok(Prepared {
            forwards: self.forwards.clone(),
            ops,
            uid_map: CString::new(format!("{uid} {uid} 1\n")).expect("digits"),
            gid_map: CString::new(format!("{gid} {gid} 1\n")).expect("digits"),
            pair,
        })
    }
}

/// The most trees a plan may keep inside hidden paths (the child holds their descriptors on
/// its stack).
const MAX_SLOTS: usize = 16;

/// The most loopback ports forwarded into one agent's network namespace.
const MAX_FORWARDS: usize = 8;

#[derive(Debug)]
enum RawOp {
    Keep(CString, usize),
    MaskDir(CString),
    MaskFile(CString),
    Mkdir(CString),
    Restore(usize, CString),
    ReadOnly(CString),
}

/// A plan ready for the child: see [`enter`].
#[derive(Debug)]
pub struct Prepared {
    ops: Vec<RawOp>,
    uid_map: CString,
    gid_map: CString,
    forwards: Vec<u16>,
    /// (oneshot's end, the agent's end) when the agent gets a network namespace.
    pair: Option<(OwnedFd, OwnedFd)>,
}

impl Prepared {
    /// Takes the listeners the agent sent from its network namespace: the proxy's, then one
    /// for each forwarded port. Call once the spawn has returned (the agent has exec'd by
    /// then, so they were sent or never will be). `Ok(None)` when the agent has no network
    /// namespace.
    pub fn take_listener(&mut self) -> Result<Option<Listeners>, NamespaceError> {
        let Some((ours, theirs)) = self.pair.take() else {
            return Ok(None);
        };
        drop(theirs);
        let fds = receive_fds(ours.as_raw_fd(), 1 + self.forwards.len()).map_err(|source| {
            NamespaceError::Io {
                what: "take the proxy listener from the agent's network namespace",
                source,
            }
        })?;
        let mut listeners = Vec::with_capacity(fds.len());
        for fd in fds {
            let listener = std::net::TcpListener::from(fd);
            listener
                .set_nonblocking(true)
                .map_err(|source| NamespaceError::Io {
                    what: "set the agent's proxy listener non-blocking",
                    source,
                })?;
            listeners.push(listener);
        }
        let mut listeners = listeners.into_iter();
        let proxy = listeners.next().ok_or_else(|| NamespaceError::Io {
            what: "take the proxy listener from the agent's network namespace",
            source: std::io::Error::other("the agent sent none"),
        })?;
        Ok(Some(Listeners {
            proxy,
            forwards: self.forwards.iter().copied().zip(listeners).collect(),
        }))
    }
}

/// What an agent's network namespace hands back: the proxy's listener and one per forwarded
/// loopback port.
#[derive(Debug)]
pub struct Listeners {
    /// `127.0.0.1:`[`AGENT_PROXY_PORT`] inside.
    pub proxy: std::net::TcpListener,
    /// (port, `127.0.0.1:port` inside).
    pub forwards: Vec<(u16, std::net::TcpListener)>,
}

/// Receives `n` descriptors sent in one `SCM_RIGHTS` message on `sock`, without waiting.
fn receive_fds(sock: RawFd, want: usize) -> std::io::Result<Vec<OwnedFd>> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut space = [0u64; 16];
    // SAFETY: msghdr is plain data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&space) as _;
    // SAFETY: recvmsg fills the buffers described by `msg`.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
    if n == -1 {
        let e = std::io::Error::last_os_error();
        return Err(if e.kind() == std::io::ErrorKind::WouldBlock {
            std::io::Error::other("the agent sent none")
        } else {
            e
        });
    }
    // SAFETY: the control buffer was filled by recvmsg; CMSG_* walk it within its length.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(std::io::Error::other("the agent sent no descriptor"));
        }
        let len = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
        let got = len / std::mem::size_of::<libc::c_int>();
        let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
        let fds: Vec<OwnedFd> = (0..got)
            .map(|i| OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))))
            .collect();
        if fds.len() != want {
            return Err(std::io::Error::other(format!(
                "the agent sent {} listeners of {want}",
                fds.len()
            )));
        }
        Ok(fds)
    }
}

mod child;
mod probe;

pub use child::enter;
pub use probe::available;

#[cfg(test)]
mod tests;
