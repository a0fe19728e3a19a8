//! The throughput case, measured as a user runs it: in a project directory holding the stream,
//! `oneshot --worker-cmd "cat stream.ndjson" --auditor-cmd "echo VERDICT: DONE" TASK`, with the
//! session in oneshot's default state directory (`$XDG_STATE_HOME/oneshot/projects/…`, here
//! pointed at a directory beside the project, on the same disk), whole-process wall time:
//! start-up, the worker's stream, the auditor, every fsync and the exit.
//!
//! Beside it, in the same rounds (the order rotated each round, the page cache flushed to disk
//! between runs so no run pays for the one before):
//! - the durable floor: `cat stream.ndjson | dd of=F bs=1M conv=fdatasync` on the state
//!   directory's file system — the least a durable copy of the stream costs on this disk;
//! - the page-cache copy: `cat stream.ndjson > F` (F removed before it ever reaches the disk).
//!
//! An earlier version of this case ran oneshot with `--state-dir` inside a temporary directory
//! and compared it with the page-cache copy alone. On a machine whose `/tmp` is a tmpfs that
//! measures a log that never touches a disk, and beside `cat > F` alone nothing said how far
//! a durable log can go; so the directory and its file system are printed now, and a tmpfs is
//! called out.

use std::fs;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::generator::{ENV_SECRET, Generator, SECRET};
use super::{LINES, bin, median, timed_usage};

/// One command timed in every round.
#[derive(Clone, Copy, PartialEq)]
enum Case {
    /// oneshot as it runs by default: the worker's lines are also printed (to /dev/null here,
    /// which measures oneshot's own cost of printing, not a terminal's).
    Printing,
    /// oneshot with `-q`: the worker's lines go to the log only.
    Quiet,
    /// `cat | dd conv=fdatasync`: the stream made durable on the state directory's disk.
    Durable,
    /// `cat > F`: the stream copied into the page cache.
    PageCache,
}

const CASES: [Case; 4] = [Case::Printing, Case::Quiet, Case::Durable, Case::PageCache];

impl Case {
    fn label(self) -> &'static str {
        match self {
            Case::Printing => "oneshot (prints the lines; stdout /dev/null)",
            Case::Quiet => "oneshot -q (the log only)",
            Case::Durable => "cat | dd of=F bs=1M conv=fdatasync",
            Case::PageCache => "cat > F (page cache)",
        }
    }
}

/// Wall times (s), CPU times (s, user + system of the command and its children) and peak RSS
/// (MB) of one case over the rounds.
#[derive(Default)]
struct Samples {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    rss: Vec<f64>,
}

/// Where everything lives: the project (the workdir, holding the stream) and the state home
/// (oneshot's default state directory is made under it; the baselines write there too).
struct Layout {
    project: PathBuf,
    state_home: PathBuf,
    stream: PathBuf,
}

/// Runs the case: `rounds` rounds of every [`Case`], then prints medians and ranges.
pub(crate) fn throughput(root: &Path, rounds: usize) {
    let layout = Layout {
        project: root.join("project"),
        state_home: root.join("state-home"),
        stream: root.join("project").join("stream.ndjson"),
    };
    fs::create_dir_all(&layout.project).expect("project dir");
    fs::create_dir_all(&layout.state_home).expect("state home");
    // A project is usually a git repository; this also keeps oneshot from taking an enclosing
    // repository (the bench's own, when the target dir is inside it) for the project.
    let _ = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&layout.project)
        .status();
    let bytes = write_stream(&layout.stream);
    let mb = bytes as f64 / 1e6;
    println!(
        "throughput: {LINES} Claude-like lines, {mb:.0} MB (mean {} bytes/line, 1% carrying a secret), redaction and the durable log on",
        bytes / LINES
    );
    println!(
        "  project {} ({}); state dir under {} ({})",
        layout.project.display(),
        fs_type(&layout.project),
        layout.state_home.display(),
        fs_type(&layout.state_home)
    );
    if [&layout.project, &layout.state_home]
        .iter()
        .any(|p| fs_type(p) == "tmpfs")
    {
        println!(
            "  WARNING: a tmpfs: nothing here reaches a disk; set ONESHOT_BENCH_DIR to a directory on one"
        );
    }
    let mut samples: Vec<Samples> = CASES.iter().map(|_| Samples::default()).collect();
    let mut log_bytes = 0;
    for round in 0..rounds {
        for k in 0..CASES.len() {
            let i = (round + k) % CASES.len();
            let (wall, usage) = timed_usage(&mut command(CASES[i], &layout));
            let s = &mut samples[i];
            s.wall.push(wall.as_secs_f64());
            s.cpu.push(cpu_seconds(&usage));
            s.rss.push(usage.ru_maxrss as f64 / 1024.0);
            if matches!(CASES[i], Case::Quiet | Case::Printing) && round == 0 {
                log_bytes = verify_log(&layout.state_home);
            }
            clean(&layout);
        }
    }
    let _ = fs::remove_dir_all(&layout.project);
    let _ = fs::remove_dir_all(&layout.state_home);
    println!(
        "  log written: {:.0} MB; {rounds} rounds, median (min–max)",
        log_bytes as f64 / 1e6
    );
    println!(
        "  {:<42} {:>22} {:>16} {:>10}",
        "", "lines/s", "MB/s in", "CPU s"
    );
    for (case, s) in CASES.iter().zip(&samples) {
        let rate = |per: f64| {
            let mut v: Vec<f64> = s.wall.iter().map(|t| per / t).collect();
            v.sort_by(f64::total_cmp);
            (median(v.clone()), v[0], v[v.len() - 1])
        };
        let (lines, lo, hi) = rate(LINES as f64);
        let (mbs, _, _) = rate(mb);
        let rss = match case {
            Case::Quiet | Case::Printing => format!("  peak RSS {:.1} MB", median(s.rss.clone())),
            _ => String::new(),
        };
        println!(
            "  {:<42} {:>7.2}M ({:.2}–{:.2}M) {:>9.0} MB/s {:>9.2} s{rss}",
            case.label(),
            lines / 1e6,
            lo / 1e6,
            hi / 1e6,
            mbs,
            median(s.cpu.clone()),
        );
    }
    let wall = |case: Case| {
        median(
            samples[CASES.iter().position(|&c| c == case).unwrap()]
                .wall
                .clone(),
        )
    };
    let durable = wall(Case::Durable);
    for case in [Case::Printing, Case::Quiet] {
        println!(
            "  {} takes {:.1}× the durable floor's wall time ({:.2} s vs {durable:.2} s)",
            case.label(),
            wall(case) / durable,
            wall(case),
        );
    }
    println!();
}

/// Writes the generated stream to `path`; its size in bytes.
fn write_stream(path: &Path) -> u64 {
    let mut out = BufWriter::new(fs::File::create(path).expect("create stream"));
    let mut generator = Generator::new(LINES);
    let mut chunk = Vec::new();
    while generator.fill(&mut chunk) {
        out.write_all(&chunk).expect("write stream");
    }
    out.flush().expect("flush stream");
    generator.bytes
}

/// The command a case runs, from the project directory as a user would.
fn command(case: Case, layout: &Layout) -> Command {
    let copy = layout.state_home.join("copy.ndjson");
    let mut cmd = match case {
        Case::Quiet | Case::Printing => {
            let mut cmd = Command::new(bin());
            if case == Case::Quiet {
                cmd.arg("-q");
            }
            cmd.args(["--worker-cmd", "cat stream.ndjson"])
                .args(["--auditor-cmd", "echo VERDICT: DONE"])
                .arg("bench task")
                // The default state dir, placed beside the project (same disk), not the user's.
                .env("XDG_STATE_HOME", &layout.state_home)
                // A secret in the environment, so the literal matcher is on as it would be for
                // a user with credentials in theirs.
                .env("BENCH_DB_PASSWORD", ENV_SECRET);
            cmd
        }
        Case::Durable => shell(&format!(
            "cat stream.ndjson | dd of='{}' bs=1M conv=fdatasync 2>/dev/null",
            copy.display()
        )),
        Case::PageCache => shell(&format!("cat stream.ndjson > '{}'", copy.display())),
    };
    cmd.current_dir(&layout.project)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

fn shell(script: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script);
    cmd
}

/// Removes what a run wrote (the sessions, the copies), then flushes the page cache to disk,
/// untimed, so the next run starts with no writeback of this one's left to compete with.
fn clean(layout: &Layout) {
    let _ = fs::remove_dir_all(layout.state_home.join("oneshot").join("projects"));
    let _ = fs::remove_file(layout.state_home.join("copy.ndjson"));
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::thread::sleep(Duration::from_millis(50));
}

fn cpu_seconds(u: &libc::rusage) -> f64 {
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The file system `path` is on, by name for the common ones.
fn fs_type(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL in a path");
    // SAFETY: statfs is plain data; `c` is a valid NUL-terminated path.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return "unknown".into();
    }
    match s.f_type as i64 {
        0xEF53 => "ext4".into(),
        0x0102_1994 => "tmpfs".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlayfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        other => format!("fs type {other:#x}"),
    }
}

/// The one session in the default state dir: its log holds every line as an activity record
/// and no secret. Read in pieces, so this process stays small (a child's peak RSS as `wait4`
/// reports it includes what it inherited before `exec`). Returns the log's size.
fn verify_log(state_home: &Path) -> u64 {
    let projects = state_home.join("oneshot").join("projects");
    let project = only_entry(&projects, "a project in the default state dir");
    let session = only_entry(&project.join("sessions"), "one session");
    let path = session.join("oneshot-log.json");
    let mut file = fs::File::open(&path).expect("open log");
    let marker: &[u8] = br#""type":"activity","role":"worker""#;
    let keep = SECRET.len().max(ENV_SECRET.len()).max(marker.len());
    let mut buf = vec![0u8; 1 << 20];
    let (mut filled, mut activity) = (0usize, 0u64);
    loop {
        let n = file.read(&mut buf[filled..]).expect("read log");
        if n == 0 {
            break;
        }
        let window = &buf[..filled + n];
        for secret in [SECRET, ENV_SECRET] {
            assert!(
                memchr::memmem::find(window, secret.as_bytes()).is_none(),
                "a secret reached the log"
            );
        }
        // Count markers that end in the new bytes only (those ending in the kept part were
        // counted last time).
        activity += memchr::memmem::find_iter(window, marker)
            .filter(|at| at + marker.len() > filled)
            .count() as u64;
        let from = window.len().saturating_sub(keep);
        buf.copy_within(from..filled + n, 0);
        filled = filled + n - from;
    }
    assert_eq!(activity, LINES, "one activity record per line");
    fs::metadata(&path).expect("log metadata").len()
}

/// The single entry of `dir`.
fn only_entry(dir: &Path, what: &str) -> PathBuf {
    let entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{what}: {}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(entries.len(), 1, "{what} in {}: {entries:?}", dir.display());
    entries.into_iter().next().expect("one")
}
