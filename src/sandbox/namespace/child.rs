//! The agent's side, between fork and exec: the namespaces entered, the masks mounted, the
//! listeners made and sent back, the nested namespace that locks it all. Async-signal-safe
//! system calls alone, on memory the plan allocated before the fork.

use super::{AGENT_PROXY_PORT, MAX_FORWARDS, MAX_SLOTS, Prepared, RawOp};
use std::os::fd::{AsRawFd, RawFd};

/// A step of [`enter`] that failed, for the error oneshot shows: the system call's errno is
/// all the child can pass back, so the step is folded into the error's message by the caller.
fn fail() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Carries out `p` in the calling process: namespaces, masks, the listener, the nested lock.
/// Only between fork and exec.
///
/// # Safety
/// Async-signal-safe system calls alone, on memory `p` owns (allocated before the fork).
pub unsafe fn enter(p: &Prepared) -> std::io::Result<()> {
    // SAFETY (whole function): system calls on C strings and stack memory only.
    unsafe {
        // oneshot is not dumpable (see main.rs), which makes /proc/self's files root's: the
        // agent, about to exec (which makes it dumpable again anyway), must own its uid_map.
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
        if p.pair.is_some() {
            flags |= libc::CLONE_NEWNET;
        }
        if libc::unshare(flags) == -1 {
            return Err(fail());
        }
        map_ids(p)?;
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) == -1
        {
            return Err(fail());
        }
        let mut slots = [-1 as RawFd; MAX_SLOTS];
        for op in &p.ops {
            run_op(op, &mut slots)?;
        }
        for fd in slots {
            if fd >= 0 {
                libc::close(fd);
            }
        }
        if let Some((_, theirs)) = &p.pair {
            bring_loopback_up()?;
            let mut fds = [-1 as RawFd; 1 + MAX_FORWARDS];
            fds[0] = listen_inside(AGENT_PROXY_PORT)?;
            for (i, port) in p.forwards.iter().enumerate() {
                fds[i + 1] = listen_inside(*port)?;
            }
            let n = 1 + p.forwards.len();
            send_fds(theirs.as_raw_fd(), &fds[..n])?;
            for fd in &fds[..n] {
                libc::close(*fd);
            }
        }
        // Nested: the masks are locked to this namespace, and the network namespace is owned
        // by the outer user namespace, where the agent holds nothing.
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) == -1 {
            return Err(fail());
        }
        map_ids(p)
    }
}

/// Maps the caller's uid and gid to themselves in its new user namespace.
unsafe fn map_ids(p: &Prepared) -> std::io::Result<()> {
    // SAFETY: as in `enter`.
    unsafe {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", p.uid_map.as_bytes())?;
        write_file(c"/proc/self/gid_map", p.gid_map.as_bytes())
    }
}

unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: as in `enter`.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd == -1 {
            return Err(fail());
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let err = fail();
        libc::close(fd);
        if n != bytes.len() as isize {
            return Err(err);
        }
        Ok(())
    }
}

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

unsafe fn run_op(op: &RawOp, slots: &mut [RawFd; MAX_SLOTS]) -> std::io::Result<()> {
    // SAFETY: as in `enter`.
    unsafe {
        let ok = match op {
            RawOp::Keep(path, n) => {
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    OPEN_TREE_CLONE | AT_RECURSIVE | libc::O_CLOEXEC as libc::c_uint,
                );
                slots[*n] = fd as RawFd;
                fd >= 0
            }
            RawOp::MaskDir(path) => {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    path.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    c"size=64k,mode=755".as_ptr().cast(),
                ) == 0
            }
            RawOp::MaskFile(path) => {
                libc::mount(
                    c"/dev/null".as_ptr(),
                    path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ) == 0
                    && read_only(path)
            }
            RawOp::Mkdir(path) => {
                libc::mkdir(path.as_ptr(), 0o755) == 0 || *libc::__errno_location() == libc::EEXIST
            }
            RawOp::Restore(n, path) => {
                libc::syscall(
                    libc::SYS_move_mount,
                    slots[*n],
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                ) == 0
            }
            RawOp::ReadOnly(path) => read_only(path),
        };
        if ok { Ok(()) } else { Err(fail()) }
    }
}

/// Makes the mount at `path` read-only (a bind remount changes this mount's flags alone).
unsafe fn read_only(path: &std::ffi::CStr) -> bool {
    // SAFETY: as in `enter`.
    unsafe {
        libc::mount(
            std::ptr::null(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
            std::ptr::null(),
        ) == 0
    }
}

/// Brings loopback up in the new network namespace.
unsafe fn bring_loopback_up() -> std::io::Result<()> {
    // SAFETY: as in `enter`; ifreq is plain data on the stack.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s == -1 {
            return Err(fail());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[0] = b'l' as libc::c_char;
        req.ifr_name[1] = b'o' as libc::c_char;
        if libc::ioctl(s, libc::SIOCGIFFLAGS, &mut req) == -1 {
            let e = fail();
            libc::close(s);
            return Err(e);
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(s, libc::SIOCSIFFLAGS, &req) == -1 {
            let e = fail();
            libc::close(s);
            return Err(e);
        }
        libc::close(s);
        Ok(())
    }
}

/// Listens on `127.0.0.1:port` in the new network namespace.
unsafe fn listen_inside(port: u16) -> std::io::Result<RawFd> {
    // SAFETY: as in `enter`; sockaddr_in is plain data on the stack.
    unsafe {
        let l = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if l == -1 {
            return Err(fail());
        }
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        if libc::bind(
            l,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) == -1
            || libc::listen(l, 1024) == -1
        {
            let e = fail();
            libc::close(l);
            return Err(e);
        }
        Ok(l)
    }
}

/// Sends `fds` over `sock` in one `SCM_RIGHTS` message.
unsafe fn send_fds(sock: RawFd, fds: &[RawFd]) -> std::io::Result<()> {
    // SAFETY: as in `enter`; the control buffer is on the stack, sized and aligned for them.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut space = [0u64; 16];
        let bytes = std::mem::size_of_val(fds) as u32;
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(bytes) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(bytes) as _;
        let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
        for (i, fd) in fds.iter().enumerate() {
            std::ptr::write_unaligned(data.add(i), *fd);
        }
        if libc::sendmsg(sock, &msg, 0) == -1 {
            return Err(fail());
        }
        Ok(())
    }
}
