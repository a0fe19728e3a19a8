//! Confining an agent with Landlock (Linux 5.13+): the agent — and everything it starts — may
//! read the system and write its workdir, temp dirs and its CLI's config and caches, and can
//! neither read nor write oneshot's own files: the sealing key, the trust store, the state
//! directories (its own session's and every other's). An agent running as the user could
//! otherwise read the key and re-seal a state file pointing at a policy of its own.
//!
//! # How it works
//!
//! Landlock grants rights on file hierarchies and cannot take a right back below a granted
//! directory, so "everything but these" is spelled out: a hierarchy holding a hidden path is
//! granted child by child ([`cover`]) — every entry but the one leading to the hidden path,
//! down to it. The ruleset is made in oneshot, where allocating is fine; the agent only
//! enforces it (`prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self` on a file descriptor,
//! async-signal-safe) between fork and exec, so the reaper above it stays unconfined and can
//! still remove the prompt file.

use std::path::{Path, PathBuf};

pub use crate::process::Sandbox;

/// Where an agent may go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// Hierarchies the agent may neither read nor write.
    pub hidden: Vec<PathBuf>,
    /// Hierarchies it may write (and read), but for what is hidden.
    pub writable: Vec<PathBuf>,
    /// The agent's working directory: writable (but for what is hidden beneath it) even when it
    /// lies inside a hidden path, as a job's worktree lies in the hidden state directory.
    pub workdir: Option<PathBuf>,
    /// The hidden paths are masked in a mount namespace of the agent's own
    /// ([`crate::sandbox::namespace`]), and Landlock grants whole directories; `false`: Landlock
    /// alone hides them, granting entry by entry around them.
    pub namespaces: bool,
}

impl Confinement {
    /// The paths that stay reachable even inside a hidden one: the workdir and the writable
    /// ones (a job's worktree and its git metadata lie in the state directory).
    pub fn kept(&self) -> Vec<PathBuf> {
        self.workdir.iter().chain(&self.writable).cloned().collect()
    }
}

/// The sandbox this machine gives when it is on: Landlock's ABI, or why there is none.
pub fn available() -> Sandbox {
    #[cfg(target_os = "linux")]
    {
        // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) returns the ABI.
        // SAFETY: the version query reads no memory.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                1u32,
            )
        };
        if abi > 0 {
            return Sandbox::Landlock { abi: abi as u32 };
        }
        let why = match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::ENOSYS) => "this kernel has no Landlock".to_string(),
            Some(libc::EOPNOTSUPP) => "Landlock is built in but turned off at boot".to_string(),
            _ => format!("Landlock: {}", std::io::Error::last_os_error()),
        };
        Sandbox::Unavailable { why }
    }
    #[cfg(not(target_os = "linux"))]
    Sandbox::Unavailable {
        why: "Landlock is Linux's".to_string(),
    }
}

/// The paths whose grants stand for `root`: `root` itself when no hidden path lies beneath it,
/// nothing when it is hidden, else each of its entries the same way — so every entry but the
/// way to a hidden path is granted whole. A symbolic link that leads into a hidden path is
/// left out (a rule on it would grant its target).
pub fn cover(root: &Path, hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    cover_into(root, hidden, &mut out);
    out
}

fn cover_into(path: &Path, hidden: &[PathBuf], out: &mut Vec<PathBuf>) {
    let real = match std::fs::canonicalize(path) {
        Ok(r) => r,
        // Gone, or a dangling link: nothing to grant.
        Err(_) => return,
    };
    if hidden.iter().any(|h| real.starts_with(h)) {
        return;
    }
    if !hidden.iter().any(|h| h.starts_with(&real)) {
        out.push(path.to_path_buf());
        return;
    }
    // An ancestor of something hidden: grant its entries, not itself. A link to such an
    // ancestor would be granted whole through its target, so only real directories are
    // walked into.
    if path.is_symlink() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for e in entries.flatten() {
        cover_into(&e.path(), hidden, out);
    }
}

/// `paths` made absolute and resolved (a hidden path is compared with resolved ones).
pub fn resolved(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    paths
        .into_iter()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .collect()
}

/// A ruleset ready for an agent to enforce between fork and exec.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct Prepared {
    fd: std::os::fd::OwnedFd,
}

#[cfg(target_os = "linux")]
impl Prepared {
    /// The ruleset's descriptor, for [`enforce`] in the child (closed on exec).
    pub fn raw(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }
}

/// Why a ruleset could not be made.
#[derive(Debug, thiserror::Error)]
#[error("confine the agent (Landlock): {0}")]
pub struct ConfineError(String);

/// Makes the ruleset for `c`: read access to the whole file system but the hidden paths, write
/// access to the writable ones but the hidden paths. `Ok(None)` when the kernel has no
/// Landlock (the caller said so already, once).
#[cfg(target_os = "linux")]
pub fn prepare(c: &Confinement) -> Result<Option<Prepared>, ConfineError> {
    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetError,
    };
    let abi = match available() {
        Sandbox::Landlock { abi } => ABI::from(abi as i32),
        _ => return Ok(None),
    };
    let err = |e: &dyn std::fmt::Display| ConfineError(e.to_string());
    let hidden = resolved(c.hidden.iter().cloned());
    let read = AccessFs::from_read(abi);
    let write = AccessFs::from_all(abi);
    // Under namespaces the hidden paths are already gone from the agent's view: the grants are
    // whole directories (a new entry in $HOME or /tmp is the agent's to make).
    let cover = |root: &Path, hidden: &[PathBuf]| {
        if c.namespaces {
            vec![root.to_path_buf()]
        } else {
            cover(root, hidden)
        }
    };
    let mut grants: Vec<(PathBuf, _)> = cover(Path::new("/"), &hidden)
        .into_iter()
        .map(|p| (p, read))
        .collect();
    for root in &c.writable {
        grants.extend(cover(root, &hidden).into_iter().map(|p| (p, write)));
    }
    if let Some(workdir) = &c.workdir {
        let real = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.clone());
        let beneath: Vec<PathBuf> = hidden
            .iter()
            .filter(|h| !real.starts_with(h))
            .cloned()
            .collect();
        grants.extend(cover(workdir, &beneath).into_iter().map(|p| (p, write)));
    }
    // An entry that vanished since it was listed is no loss.
    let rules = grants.into_iter().filter_map(|(path, access)| {
        PathFd::new(path)
            .ok()
            .map(|fd| Ok::<_, RulesetError>(PathBeneath::new(fd, access)))
    });
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(write)
        .map_err(|e| err(&e))?
        .create()
        .map_err(|e| err(&e))?
        .add_rules(rules)
        .map_err(|e| err(&e))?;
    let fd: Option<std::os::fd::OwnedFd> = ruleset.into();
    Ok(fd.map(|fd| Prepared { fd }))
}

/// Enforces the ruleset `fd` on the calling process and all it will start. Only between fork
/// and exec: async-signal-safe system calls on integers.
///
/// # Safety
/// `fd` is a Landlock ruleset's descriptor, open in this process.
#[cfg(target_os = "linux")]
pub unsafe fn enforce(fd: std::os::fd::RawFd) -> std::io::Result<()> {
    // SAFETY: prctl and the Landlock system call take plain integers.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) == -1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cover_grants_everything_but_the_way_to_a_hidden_path() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        for p in ["a/x", "b", "c/d/secret", "c/d/other", "c/e"] {
            std::fs::create_dir_all(root.join(p)).unwrap();
        }
        std::os::unix::fs::symlink(root.join("c/d/secret"), root.join("link")).unwrap();
        let hidden = vec![root.join("c/d/secret")];
        let mut got = cover(&root, &hidden);
        got.sort();
        assert_eq!(
            got,
            [
                root.join("a"),
                root.join("b"),
                root.join("c/d/other"),
                root.join("c/e")
            ]
        );
        assert_eq!(cover(&root.join("a"), &hidden), [root.join("a")]);
        assert!(cover(&root.join("c/d/secret"), &hidden).is_empty());
    }
}
