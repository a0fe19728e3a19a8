//! Where this process's cgroups are: the mounted hierarchies (`/proc/self/mountinfo`) and the
//! process's place in each (`/proc/self/cgroup`).

use std::fs;
use std::path::{Path, PathBuf};

/// A mounted cgroup hierarchy.
#[derive(Debug, Clone)]
pub(crate) struct Mount {
    /// Where it is mounted.
    pub point: PathBuf,
    /// The hierarchy's path the mount shows at `point` (`/` unless a container's view).
    pub root: String,
    /// v1: the controllers it holds (`memory`, `cpu`, `cpuacct`); v2: empty.
    pub controllers: Vec<String>,
    /// cgroup2.
    pub v2: bool,
}

/// The cgroup mounts, from `/proc/self/mountinfo`'s text.
pub(crate) fn mounts(mountinfo: &str) -> Vec<Mount> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        // "36 35 0:31 / /sys/fs/cgroup/memory rw,relatime shared:1 - cgroup cgroup rw,memory"
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        let (Some(root), Some(point), Some(fstype)) = (l.get(3), l.get(4), r.first()) else {
            continue;
        };
        let v2 = *fstype == "cgroup2";
        if !v2 && *fstype != "cgroup" {
            continue;
        }
        let controllers = if v2 {
            Vec::new()
        } else {
            r.get(2)
                .map(|o| o.split(',').map(str::to_string).collect())
                .unwrap_or_default()
        };
        out.push(Mount {
            point: PathBuf::from(unescape(point)),
            root: unescape(root),
            controllers,
            v2,
        });
    }
    out
}

/// mountinfo escapes spaces and the like as `\040`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let n = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(n);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's cgroup path in the hierarchy holding `controller` (v1), or in the unified
/// hierarchy (`controller` `None`), from `/proc/self/cgroup`'s text.
pub(crate) fn own_path(proc_cgroup: &str, controller: Option<&str>) -> Option<String> {
    proc_cgroup.lines().find_map(|line| {
        let mut f = line.splitn(3, ':');
        let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        let hit = match controller {
            None => ctrls.is_empty(),
            Some(c) => ctrls.split(',').any(|x| x == c),
        };
        hit.then(|| path.to_string())
    })
}

/// The directory of this process's cgroup in `m`, given its path in the hierarchy.
pub(crate) fn dir_in(m: &Mount, path: &str) -> Option<PathBuf> {
    let rel = if m.root == "/" {
        path
    } else {
        // A container's mount shows a subtree: a path outside it is not reachable here.
        path.strip_prefix(m.root.as_str())?
    };
    Some(m.point.join(rel.trim_start_matches('/')))
}

/// This process's cgroup directory for a v1 `controller`, or the v2 one (`None`).
pub(crate) fn own_dir(controller: Option<&str>) -> Option<PathBuf> {
    let info = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let cg = fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own_path(&cg, controller)?;
    let m = mounts(&info).into_iter().find(|m| match controller {
        None => m.v2,
        Some(c) => !m.v2 && m.controllers.iter().any(|x| x == c),
    })?;
    dir_in(&m, &path).filter(|d| Path::new(d).is_dir())
}

/// This process's memory cgroup directories: the v2 one with the top of its mount (where the
/// walk up its ancestors stops), and the v1 one.
pub(crate) fn own_memory_dirs() -> (Option<(PathBuf, PathBuf)>, Option<PathBuf>) {
    let v2 = own_dir(None).and_then(|d| {
        let info = fs::read_to_string("/proc/self/mountinfo").ok()?;
        let top = mounts(&info)
            .into_iter()
            .filter(|m| m.v2 && d.starts_with(&m.point))
            .max_by_key(|m| m.point.as_os_str().len())?
            .point;
        Some((d, top))
    });
    (v2, own_dir(Some("memory")))
}
