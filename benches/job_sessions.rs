//! Many sessions in one `oneshot job run`, through the release binary: its peak memory and
//! thread count with every session alive at once, each with its own Lua policy.
//!
//! N jobs are created on one git repository (`policies/default.lua`, a shell worker and auditor),
//! then `oneshot job run --parallel N` steps them all. Each worker opens a FIFO the bench holds,
//! marks itself started and blocks reading it; once all N have started (every session alive at
//! once — provisioning N worktrees takes longer than any fixed sleep would) the bench closes the
//! FIFO, the workers write a file and end, the auditors pass, and every job rests in
//! APPROVAL_REQUIRED. `/proc/PID/status` of the runner is sampled every 50 ms throughout.
//!
//! Cases: N = 10 (the baseline: what the process costs before sessions add up) and N = 1,000
//! (the target: ≤ 1 GB RSS and ≤ 16 threads). The difference over the extra sessions is the
//! cost of one session.
//!
//! Run: `cargo bench --bench job_sessions` (`-- N` for another count than 1,000).
//! `ONESHOT_BENCH_BIN=PATH` measures another build of oneshot instead.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The binary this bench was built with.
#[path = "support/git.rs"]
mod support_git;
use support_git::git;

const BUILT: &str = env!("CARGO_BIN_EXE_oneshot");
const POLICY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/policies/default.lua");
/// How long the bench waits for every session to be alive before it lets them go anyway.
const START_LIMIT: Duration = Duration::from_secs(600);

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000);
    let bin = std::env::var("ONESHOT_BENCH_BIN").unwrap_or_else(|_| BUILT.to_string());
    println!("binary: {bin}");
    println!("policy: {POLICY} (each session its own Lua state, hot reload on)");
    let (rss_kib, uss_kib, threads) = one_process(&bin);
    // N processes share the binary's pages; each adds its private (unique) memory.
    println!(
        "baseline, one session as its own `oneshot run` process: {:.1} MiB RSS ({:.1} MiB \
         its own), {threads} threads; ×{n}: ~{:.0} MiB, {} threads",
        rss_kib as f64 / 1024.0,
        uss_kib as f64 / 1024.0,
        (rss_kib - uss_kib + uss_kib * n as u64) as f64 / 1024.0,
        threads * n as u64
    );
    for count in [10, n] {
        let r = run(&bin, count);
        r.print();
    }
}

/// One session in a process of its own, as `oneshot run` starts it: its RSS and threads while
/// the worker runs (the worker waits on a FIFO, as in the job runs): RSS, its private part
/// (what another such process would add), threads.
fn one_process(bin: &str) -> (u64, u64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let (marks, hold, worker) = gate(root);
    let mut child = oneshot(
        bin,
        &root.join("state"),
        &[
            "run",
            "--policy",
            POLICY,
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            "echo VERDICT: DONE",
            "bench task",
        ],
    )
    .current_dir(root)
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn oneshot run");
    let start = Instant::now();
    while fs::read_dir(&marks).map_or(0, |d| d.count()) == 0 && start.elapsed() < START_LIMIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let st = status(child.id()).expect("oneshot run's status");
    let rollup = fs::read_to_string(format!("/proc/{}/smaps_rollup", child.id())).unwrap();
    let private: u64 = rollup
        .lines()
        .filter(|l| l.starts_with("Private_"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    drop(hold);
    let _ = child.wait();
    (st.rss_kib, private, st.threads)
}

/// The go signal, a FIFO in `root`: returns the directory workers mark themselves started in,
/// the bench's open end of the FIFO, and the worker command line. The FIFO is held read-write so the
/// workers' opens never block; dropping the held end lets every worker read end of file and
/// go on. Opened close-on-exec, so oneshot does not inherit it.
fn gate(root: &Path) -> (PathBuf, File, String) {
    let marks = root.join("started");
    fs::create_dir_all(&marks).unwrap();
    let gate = root.join("gate");
    nix::unistd::mkfifo(&gate, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let hold = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&gate)
        .expect("open the FIFO");
    let worker = format!(
        "sh -c 'exec 3<{gate}; touch {marks}/$$; read x <&3; echo ok > out.txt'",
        gate = gate.display(),
        marks = marks.display()
    );
    (marks, hold, worker)
}

/// What one case measured.
struct Report {
    jobs: usize,
    create: Duration,
    all_alive: Option<Duration>,
    alive_peak: usize,
    wall: Duration,
    peak_rss_kib: u64,
    rss_alive_kib: u64,
    peak_threads: u64,
    peak_fds: u64,
    resting: String,
}

impl Report {
    fn print(&self) {
        let alive = match self.all_alive {
            Some(d) => format!("all {} alive after {:.1} s", self.jobs, d.as_secs_f64()),
            None => format!("only {} of {} alive at once", self.alive_peak, self.jobs),
        };
        println!(
            "{:>5} jobs: created in {:.1} s; {alive}; run {:.1} s; peak RSS {:.1} MiB \
             (with all alive {:.1} MiB); peak threads {}; peak open files {}; resting: {}",
            self.jobs,
            self.create.as_secs_f64(),
            self.wall.as_secs_f64(),
            self.peak_rss_kib as f64 / 1024.0,
            self.rss_alive_kib as f64 / 1024.0,
            self.peak_threads,
            self.peak_fds,
            self.resting,
        );
    }
}

fn oneshot(bin: &str, state: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.arg("--state-dir").arg(state).args(args);
    for k in ["ONESHOT_WORKER", "ONESHOT_AUDITOR", "ONESHOT_POLICY"] {
        c.env_remove(k);
    }
    c.env("ONESHOT_ACTOR", "bench").env("NO_COLOR", "1");
    c
}

fn run(bin: &str, n: usize) -> Report {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let repo = root.join("repo");
    fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    fs::write(repo.join("a.txt"), "a\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "a"]);
    let state = root.join("state");
    let (marks, hold, worker) = gate(root);

    let start = Instant::now();
    create_jobs(bin, &state, &repo, &worker, n);
    let create = start.elapsed();

    let start = Instant::now();
    let mut child = oneshot(
        bin,
        &state,
        &["job", "run", "--parallel", &n.to_string(), "--lease", "5m"],
    )
    .stdout(Stdio::null())
    .stderr(File::create(root.join("run.err")).unwrap())
    .spawn()
    .expect("spawn job run");
    let sampler = Sampler::start(child.id());
    let mut all_alive = None;
    let mut alive_peak = 0;
    let mut rss_alive_kib = 0;
    while start.elapsed() < START_LIMIT {
        let alive = fs::read_dir(&marks).map(|d| d.count()).unwrap_or(0);
        alive_peak = alive_peak.max(alive);
        if alive >= n {
            all_alive = Some(start.elapsed());
            // Let the runner settle with everything alive before reading its size.
            std::thread::sleep(Duration::from_millis(500));
            rss_alive_kib = status(child.id()).map_or(0, |s| s.rss_kib);
            break;
        }
        if exited(&mut child) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(hold);
    let code = child.wait().expect("wait for job run");
    let wall = start.elapsed();
    let (peak_rss_kib, peak_threads, peak_fds) = sampler.stop();
    if !code.success() {
        eprintln!(
            "job run exited {code}: {}",
            fs::read_to_string(root.join("run.err")).unwrap_or_default()
        );
    }
    Report {
        jobs: n,
        create,
        all_alive,
        alive_peak,
        wall,
        peak_rss_kib,
        rss_alive_kib,
        peak_threads,
        peak_fds,
        resting: resting(bin, &state),
    }
}

fn exited(child: &mut Child) -> bool {
    matches!(child.try_wait(), Ok(Some(_)))
}

/// `n` active jobs, created through the binary four at a time.
fn create_jobs(bin: &str, state: &Path, repo: &Path, worker: &str, n: usize) {
    let source = repo.display().to_string();
    let args = |i: usize| -> Vec<String> {
        [
            "job",
            "create",
            &format!("bench task {i}"),
            "--source",
            &source,
            "--worker-cmd",
            worker,
            "--auditor-cmd",
            "echo VERDICT: DONE",
            "--policy",
            POLICY,
            "--activate",
        ]
        .map(String::from)
        .to_vec()
    };
    let mut running: Vec<Child> = Vec::new();
    for i in 0..n {
        if running.len() == 4 {
            let mut first = running.remove(0);
            assert!(first.wait().unwrap().success(), "job create failed");
        }
        let a = args(i);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        running.push(
            oneshot(bin, state, &refs)
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn job create"),
        );
    }
    for mut c in running {
        assert!(c.wait().unwrap().success(), "job create failed");
    }
}

/// How many jobs rest in each state, e.g. `1000 APPROVAL_REQUIRED`.
fn resting(bin: &str, state: &Path) -> String {
    let out = oneshot(bin, state, &["job", "list", "--json"])
        .output()
        .expect("job list");
    // One JSON object per line.
    let jobs = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .collect::<Vec<_>>();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for j in &jobs {
        let s = j["state"].as_str().unwrap_or("?").to_string();
        *counts.entry(s).or_default() += 1;
    }
    counts
        .iter()
        .map(|(s, n)| format!("{n} {s}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A process's size and threads, from `/proc/PID/status`.
struct Status {
    rss_kib: u64,
    hwm_kib: u64,
    threads: u64,
}

fn status(pid: u32) -> Option<Status> {
    let text = fs::read_to_string(PathBuf::from(format!("/proc/{pid}/status"))).ok()?;
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    Some(Status {
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
        threads: field("Threads:")?,
    })
}

/// Samples a process every 50 ms until stopped: its peak RSS, threads and open files.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<(u64, u64, u64)>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let (mut hwm, mut threads, mut fds) = (0, 0, 0);
            while !s.load(Ordering::Relaxed) {
                if let Some(st) = status(pid) {
                    hwm = hwm.max(st.hwm_kib);
                    threads = threads.max(st.threads);
                }
                let open = fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
                fds = fds.max(open as u64);
                std::thread::sleep(Duration::from_millis(50));
            }
            (hwm, threads, fds)
        });
        Sampler { stop, thread }
    }

    fn stop(self) -> (u64, u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("sampler")
    }
}
