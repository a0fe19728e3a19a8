//! The dashboard's live stream, through the release binary: a real `oneshot job run` runs a
//! command worker that prints a line with the time it was printed (`t=<ns>`) every 20 ms, and
//! readers hold the job page's stream (`GET /jobs/ID/events`, a `read` token) of a real
//! `oneshot serve`, each timing every line from its printing to its event's arrival — the
//! whole path: the worker's stdout, the session's log, the runner's shipment to the store,
//! the store's change heard by `serve`, the page's account rendering, the event.
//!
//! Cases (issue 24's figures), in one run on one SQLite store:
//! * 1 reader (the baseline) and 100 readers: the line → event latency, p50/p99/max over every
//!   line every reader got (target: p99 ≤ 200 ms with 100);
//! * idle streams: the server's resident memory with N idle board streams open, less before,
//!   per stream (target ≤ 64 KiB), and its CPU over 5 s meanwhile (target ≈ 0).
//!
//! Run: `cargo bench --bench live` (`-- N` for another count of readers than 100).
//! `ONESHOT_BENCH_BIN=PATH` measures another build of oneshot instead.

#[path = "support/proc.rs"]
mod proc;
#[path = "support/serving.rs"]
mod serving;
#[path = "support/git.rs"]
mod support_git;
use support_git::git;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const BUILT: &str = env!("CARGO_BIN_EXE_oneshot");
/// Lines each worker prints.
const LINES: usize = 100;
/// Idle streams held open for the memory figure.
const IDLE: usize = 200;

fn main() {
    let readers: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100);
    let bin = std::env::var("ONESHOT_BENCH_BIN").unwrap_or_else(|_| BUILT.to_string());
    println!("binary: {bin}");
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "a"]);
    let state = root.join("state");
    let token = out(oneshot(
        &bin,
        &state,
        &repo,
        &["token", "create", "--name", "bench", "--scope", "read"],
    ));
    let server = Server::start(&bin, &state, &repo);

    println!("| readers | lines timed | p50 | p99 | max |");
    println!("| --- | --- | --- | --- | --- |");
    for n in [1, readers] {
        let worker = format!(
            "sh -c 'for i in $(seq 1 {LINES}); do echo \"t=$(date +%s%N)\"; sleep 0.02; done; echo hi > f.txt'"
        );
        let id = out(oneshot(
            &bin,
            &state,
            &repo,
            &[
                "job",
                "create",
                "--worker-cmd",
                &worker,
                "--auditor-cmd",
                "echo VERDICT: DONE",
                "--activate",
                "print timed lines",
            ],
        ));
        let clients: Vec<_> = (0..n)
            .map(|_| {
                let s = server.stream(&format!("/jobs/{id}/events"), &token);
                std::thread::spawn(move || read_lines(s))
            })
            .collect();
        let status = oneshot(&bin, &state, &repo, &["job", "run"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("job run");
        assert!(status.success());
        let mut all: Vec<f64> = clients
            .into_iter()
            .flat_map(|c| c.join().expect("a reader"))
            .collect();
        all.sort_by(f64::total_cmp);
        let at = |q: f64| all[((all.len() - 1) as f64 * q) as usize];
        println!(
            "| {n} | {} | {:.1} ms | {:.1} ms | {:.1} ms |",
            all.len(),
            at(0.5),
            at(0.99),
            all[all.len() - 1]
        );
    }

    let before = server.rss_kib();
    let idle: Vec<TcpStream> = (0..IDLE)
        .map(|_| server.stream("/events", &token).into_inner())
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let with = server.rss_kib();
    let cpu = server.cpu(Duration::from_secs(5));
    println!(
        "{IDLE} idle streams: {:.1} KiB each ({} KiB resident before, {} KiB with them); \
         CPU over 5 s with them open: {:.3} % of a core",
        (with.saturating_sub(before)) as f64 / IDLE as f64,
        before,
        with,
        cpu * 100.0
    );
    drop(idle);
}

/// Reads `line` events until the job rests; each line's latency in ms.
fn read_lines(mut s: BufReader<TcpStream>) -> Vec<f64> {
    let mut got = Vec::new();
    // A line's first showing is timed; a later line quoting it (the run's final output) is not.
    let mut seen = std::collections::HashSet::new();
    let (mut event, mut data) = (String::new(), String::new());
    let mut l = String::new();
    loop {
        l.clear();
        if s.read_line(&mut l).unwrap_or(0) == 0 {
            return got;
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as f64;
        let line = l.trim_end();
        if let Some(v) = line.strip_prefix("event: ") {
            event = v.to_string();
        } else if let Some(v) = line.strip_prefix("data: ") {
            data = v.to_string();
        } else if line.is_empty() && !event.is_empty() {
            if event == "line" {
                let mut rest = data.as_str();
                while let Some(i) = rest.find("t=") {
                    rest = &rest[i + 2..];
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    if let Ok(t) = digits.parse::<f64>()
                        && seen.insert(digits)
                    {
                        got.push((now - t) / 1e6);
                    }
                }
            } else if event == "job" && data.contains("APPROVAL_REQUIRED") {
                return got;
            }
            event.clear();
        }
    }
}

fn oneshot(bin: &str, state: &Path, repo: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.arg("--state-dir").arg(state).args(args).current_dir(repo);
    for k in [
        "ONESHOT_WORKER",
        "ONESHOT_AUDITOR",
        "ONESHOT_POLICY",
        "ONESHOT_STORE",
    ] {
        c.env_remove(k);
    }
    c.env("ONESHOT_ACTOR", "bench").env("NO_COLOR", "1");
    c
}

fn out(mut c: Command) -> String {
    let o = c.output().expect("oneshot");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

struct Server {
    child: Child,
    host: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Server {
    fn start(bin: &str, state: &Path, repo: &Path) -> Server {
        let (child, host) = serving::start(oneshot(
            bin,
            state,
            repo,
            &["serve", "--listen", "127.0.0.1:0"],
        ));
        Server { child, host }
    }

    /// An open stream at `path`, its response head read.
    fn stream(&self, path: &str, token: &str) -> BufReader<TcpStream> {
        let mut s = TcpStream::connect(&self.host).expect("connect");
        write!(
            s,
            "GET {path} HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\r\n",
            self.host
        )
        .expect("send");
        let mut r = BufReader::new(s);
        let mut l = String::new();
        r.read_line(&mut l).expect("status");
        assert!(l.contains(" 200 "), "{l}");
        loop {
            l.clear();
            if r.read_line(&mut l).expect("head") == 0 || l == "\r\n" {
                return r;
            }
        }
    }

    fn rss_kib(&self) -> u64 {
        proc::rss_kib(self.child.id())
    }

    /// The share of one core the server used over `span`.
    fn cpu(&self, span: Duration) -> f64 {
        proc::cpu(self.child.id(), span)
    }
}
