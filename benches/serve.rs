//! `oneshot serve` under load, through the real binary over HTTP on 127.0.0.1, beside `oneshot
//! job list` of the same store in the same run (the baseline: what reading the jobs costs
//! without a page).
//!
//! Cases (issue 24's figures):
//! * `board`: `GET /` with a bearer token over a SQLite store of 10,000 jobs in mixed states,
//!   rendered on the server (the target: ≤ 100 ms); the baseline is `oneshot job list` of the
//!   same store, process start included;
//! * `job page`: `GET /jobs/ID` of one of them;
//! * `idle`: the server's CPU (user + system, from `/proc/PID/stat`) over 5 s with nothing
//!   asked of it (the target: ≈ 0 — it polls nothing).
//!
//! Run: `cargo bench --bench serve` (`-- quick` for 1,000 jobs). The live stream's figures
//! (an output line to the browser, memory per idle stream) are benches/live.rs's.

#[path = "support/jobs.rs"]
#[allow(dead_code)] // The runner's helpers: this bench only creates jobs.
mod jobs;
#[path = "support/proc.rs"]
#[allow(dead_code)] // Its memory reading: the live bench's.
mod proc;
#[path = "support/serving.rs"]
mod serving;

use jobs::{create, job};
use oneshot::job::SqliteStore;
use oneshot::job::store::prelude::*;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BUILT: &str = env!("CARGO_BIN_EXE_oneshot");
const SAMPLES: usize = 20;

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let n = if quick { 1_000 } else { 10_000 };
    let bin = std::env::var("ONESHOT_BENCH_BIN").unwrap_or_else(|_| BUILT.to_string());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    let store = SqliteStore::open(&path).expect("open");
    for i in 0..n {
        create(&store, &job(i, ""));
    }
    let token = oneshot::token::create(&store, "bench", &[oneshot::token::Scope::Read], "bench")
        .expect("a token")
        .token;
    let one = store
        .list(&Default::default())
        .expect("list")
        .first()
        .expect("a job")
        .id
        .clone();
    drop(store);
    println!("binary: {bin}; {n} jobs in a SQLite store");

    let list = time(|| {
        let out = Command::new(&bin)
            .args(["job", "list", "--store"])
            .arg(&path)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .stdout(Stdio::null())
            .status()
            .expect("job list");
        assert!(out.success());
    });
    let mut server = Server::start(&bin, &path, dir.path());
    let board = time(|| {
        let body = server.get("/", &token);
        assert!(body.contains("</html>"), "{}", &body[..body.len().min(300)]);
    });
    let page = time(|| {
        let body = server.get(&format!("/jobs/{one}"), &token);
        assert!(body.contains(&one));
    });
    let idle = server.idle_cpu(Duration::from_secs(5));
    println!("| case | median | p95 |");
    println!("| --- | --- | --- |");
    for (name, t) in [
        (
            "`oneshot job list` (baseline, process start included)",
            &list,
        ),
        ("`GET /` (the board)", &board),
        ("`GET /jobs/ID` (a job's page)", &page),
    ] {
        println!(
            "| {name} | {:.1} ms | {:.1} ms |",
            ms(t[t.len() / 2]),
            ms(t[t.len() * 95 / 100])
        );
    }
    println!(
        "idle `oneshot serve` over 5 s: {:.3} % of a core",
        idle * 100.0
    );
    server.child.kill().ok();
    server.child.wait().ok();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// [`SAMPLES`] timings of `f`, sorted, after one warm-up run.
fn time(mut f: impl FnMut()) -> Vec<Duration> {
    f();
    let mut t: Vec<Duration> = (0..SAMPLES)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    t.sort();
    t
}

struct Server {
    child: Child,
    host: String,
}

impl Server {
    fn start(bin: &str, store: &std::path::Path, dir: &std::path::Path) -> Server {
        let mut serve = Command::new(bin);
        serve
            .args(["serve", "--listen", "127.0.0.1:0", "--store"])
            .arg(store)
            .arg("--state-dir")
            .arg(dir.join("state"));
        let (child, host) = serving::start(serve);
        Server { child, host }
    }

    /// `GET path` with the bearer token; the body.
    fn get(&mut self, path: &str, token: &str) -> String {
        let mut s = std::net::TcpStream::connect(&self.host).expect("connect");
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
            self.host
        )
        .expect("send");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        assert!(
            out.starts_with("HTTP/1.1 200"),
            "{}",
            &out[..out.len().min(300)]
        );
        out
    }

    /// The share of one core the server used over `span`, asked nothing.
    fn idle_cpu(&self, span: Duration) -> f64 {
        proc::cpu(self.child.id(), span)
    }
}
