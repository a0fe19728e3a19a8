//! The PostgreSQL job store under load, beside the SQLite store in the same run, on a real
//! PostgreSQL (a temporary cluster from Debian's binaries, `tests/common/pg_server.rs`: Unix
//! socket, `fsync`, `synchronous_commit` and `full_page_writes` off — what is measured is
//! oneshot's statements and round trips, not a disk).
//!
//! Cases (issue 23's figures):
//! * `claims`: N PENDING jobs; R runner processes (this binary run again with
//!   `--runner-process`), each with its own store connection and S slots (`job run
//!   --parallel S`: each turn claims up to S steps at once, as the runner fills its free
//!   slots), doing claim → PROVISIONING → INTERVENTION_REQUIRED (3 writes a step, the claim
//!   shared by the turn's steps) until nothing is left; steps/s for R × S = 1 × 1, 4 × 1 and
//!   4 × 8, on both stores (the target on PostgreSQL with 4: ≥ 5,000), timed from the moment every
//!   runner is connected to the moment the last finds nothing left. Beside the rate, the CPU
//!   a step cost the runner processes (each counts its own while it runs) and the PostgreSQL
//!   server (its processes, read from `/proc`): on a shared machine the rate moves with the
//!   other load, the CPU a step much less, and on C cores the rate cannot pass
//!   C / (runners' + server's CPU a step);
//! * `created → claimed`: an idle runner waiting for work (`wait_for_work`: LISTEN/NOTIFY on
//!   PostgreSQL), another connection creating jobs one at a time; the time from `create`
//!   returning to the runner's claim returning (target p50 ≤ 20 ms, p99 ≤ 100 ms);
//! * `list`: `list` over 100,000 jobs (target ≤ 200 ms);
//! * `idle`: an idle runner's CPU while it waits 5 s with nothing to do (target ≤ 0.1 % of a
//!   core), and its connections.
//!
//! Run: `cargo bench --bench job_store_pg` (`-- quick` for 10,000 jobs to list, `-- claims`
//! for the claims case alone).

#[path = "support/jobs.rs"]
mod jobs;
#[path = "../tests/common/pg_server.rs"]
mod pg_server;

use jobs::{advance, create, job};
use oneshot::job::store::{PgUrl, PostgresStore};
use oneshot::job::{JobState, JobStore, ListFilter, SqliteStore};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CLAIM_JOBS: usize = 10_000;
const TTL: u64 = 60_000;

/// One runner's loop with `slots` free slots (`job run --parallel`): each turn claims up to
/// that many steps at once, as the runner does ([`JobStore::claim_up_to`]; one slot: one
/// [`JobStore::claim`]), then moves each on; its steps.
fn run(store: &dyn JobStore, runner: &str, slots: usize) -> usize {
    let mut n = 0;
    loop {
        let claims = if slots == 1 {
            store
                .claim(runner, None, TTL)
                .expect("claim")
                .into_iter()
                .collect()
        } else {
            store.claim_up_to(runner, TTL, slots).expect("claims")
        };
        if claims.is_empty() {
            break;
        }
        for c in claims {
            let mut j = c.job;
            advance(store, &c.lease, &mut j, JobState::Provisioning);
            advance(store, &c.lease, &mut j, JobState::InterventionRequired);
            n += 1;
        }
    }
    n
}

/// Where a runner process finds its store: the argument it is given.
#[derive(Clone, Copy)]
enum Kind {
    Postgres,
    Sqlite,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Postgres => "postgres",
            Kind::Sqlite => "sqlite",
        }
    }

    fn open(self, at: &str) -> Box<dyn JobStore> {
        match self {
            Kind::Postgres => pg_store(&PgUrl::parse(at).expect("url")),
            Kind::Sqlite => Box::new(SqliteStore::open(at).expect("open")),
        }
    }
}

/// A runner process (this binary run as `RUNNER_ARG KIND AT NAME SLOTS`): opens its store,
/// says `ready`, waits for a line on stdin, runs [`run`], and prints its steps.
fn runner_process(args: &[String]) {
    let [kind, at, name, slots] = args else {
        panic!("usage: job_store_pg {RUNNER_ARG} postgres|sqlite URL|PATH NAME SLOTS")
    };
    let slots: usize = slots.parse().expect("a number of slots");
    let kind = match kind.as_str() {
        "postgres" => Kind::Postgres,
        _ => Kind::Sqlite,
    };
    let store = kind.open(at);
    // The connection is made (and the schema checked) before the clock starts.
    store.now_ms().expect("store");
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .expect("stdout");
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).expect("stdin");
    let cpu_before = cpu();
    let n = run(&*store, name, slots);
    // Its CPU while it ran, not while it started (loading, connecting).
    writeln!(out, "{n} {}", (cpu() - cpu_before).as_nanos()).expect("stdout");
}

/// The argument that makes this binary a runner process.
const RUNNER_ARG: &str = "--runner-process";

/// Steps/s of `runners` runner processes of `slots` slots each on the store `kind` at `at`,
/// from the moment all are connected to the moment the last has found nothing left, and the
/// CPU a step cost.
fn steps(runners: usize, slots: usize, kind: Kind, at: &str) -> Rate {
    {
        let s = kind.open(at);
        for i in 0..CLAIM_JOBS {
            create(&*s, &job(i, ""));
        }
    }
    let exe = std::env::current_exe().expect("this binary");
    let mut children: Vec<_> = (0..runners)
        .map(|r| {
            let mut child = Command::new(&exe)
                .args([
                    RUNNER_ARG,
                    kind.name(),
                    at,
                    &format!("runner-{r}"),
                    &slots.to_string(),
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("a runner process");
            let mut out = BufReader::new(child.stdout.take().expect("stdout"));
            let mut line = String::new();
            out.read_line(&mut line).expect("ready");
            assert_eq!(line.trim(), "ready", "the runner process started");
            (child, out)
        })
        .collect();
    let (start, server) = (Instant::now(), server_cpu());
    for (child, _) in &mut children {
        let stdin = child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "go")
            .and_then(|()| stdin.flush())
            .expect("go");
    }
    let (total, runners_cpu) = children
        .iter_mut()
        .map(|(_, out)| {
            let mut line = String::new();
            out.read_line(&mut line).expect("steps");
            let (n, ns) = line.trim().split_once(' ').expect("steps and CPU");
            let ns: u64 = ns.parse().expect("CPU in ns");
            (
                n.parse::<usize>().expect("a count of steps"),
                Duration::from_nanos(ns),
            )
        })
        .fold((0, Duration::ZERO), |(n, t), (m, u)| (n + m, t + u));
    let took = start.elapsed();
    for (mut child, _) in children {
        assert!(
            child.wait().expect("wait").success(),
            "a runner process failed"
        );
    }
    assert_eq!(total, CLAIM_JOBS, "every job stepped exactly once");
    // The backends that served the runners have exited; let the postmaster reap them.
    std::thread::sleep(Duration::from_millis(200));
    let server = server_cpu() - server;
    let per_step = |d: Duration| d.as_secs_f64() * 1e6 / total as f64;
    Rate {
        steps_per_s: total as f64 / took.as_secs_f64(),
        runners_us: per_step(runners_cpu),
        server_us: per_step(server),
    }
}

/// What a claims run measured.
struct Rate {
    steps_per_s: f64,
    /// CPU a step cost the runner processes, in µs.
    runners_us: f64,
    /// CPU a step cost PostgreSQL (its processes), in µs; about nothing for SQLite.
    server_us: f64,
}

fn pg_store(url: &PgUrl) -> Box<dyn JobStore> {
    Box::new(PostgresStore::connect(url).expect("connect"))
}

fn fresh_pg() -> PgUrl {
    let url = PgUrl::parse(&pg_server::fresh_database().expect("PostgreSQL")).expect("url");
    PostgresStore::migrate(&url).expect("migrate");
    url
}

/// Percentile `p` (0–100) of sorted `v`.
fn pct(v: &[Duration], p: usize) -> Duration {
    v[(v.len() * p / 100).min(v.len() - 1)]
}

/// Created → claimed, `n` times: an idle runner that waits for work as `job run` does.
fn latency(store: Arc<dyn JobStore>, creator: Box<dyn JobStore>, n: usize) -> Vec<Duration> {
    let (tx, rx) = std::sync::mpsc::channel::<Instant>();
    let runner = std::thread::spawn(move || {
        let mut got = Vec::with_capacity(n);
        while got.len() < n {
            let since = store.work_seen();
            match store.claim("runner-idle", None, TTL).expect("claim") {
                Some(c) => {
                    let now = Instant::now();
                    let created: Instant = rx.recv().expect("a creation time");
                    got.push(now.duration_since(created));
                    let mut j = c.job;
                    advance(&*store, &c.lease, &mut j, JobState::InterventionRequired);
                }
                None => {
                    store.wait_for_work(since, Duration::from_millis(500));
                }
            }
        }
        got
    });
    for i in 0..n {
        std::thread::sleep(Duration::from_millis(20));
        create(&*creator, &job(i, "l"));
        tx.send(Instant::now()).expect("send");
    }
    let mut v = runner.join().expect("runner");
    v.sort();
    v
}

/// This process's CPU time so far.
fn cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |tv: libc::timeval| Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
    t(u.ru_utime) + t(u.ru_stime)
}

/// The CPU time so far of the test cluster: its postmaster, the backends it reaped, and those
/// alive — what the server spent, whatever else the machine runs.
fn server_cpu() -> Duration {
    let server = pg_server::server().expect("PostgreSQL");
    let pid_file = server.socket_dir.join("data/postmaster.pid");
    let text = std::fs::read_to_string(&pid_file).expect("postmaster.pid");
    let postmaster: i64 = text
        .lines()
        .next()
        .and_then(|l| l.parse().ok())
        .expect("a pid");
    // SAFETY: sysconf has no preconditions.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let mut ticks = 0_u64;
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the command's name (in parentheses, maybe with spaces): state, ppid, …
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let pid: i64 = head
            .split(' ')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let f: Vec<u64> = rest
            .split(' ')
            .skip(1)
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        // From the ppid on: utime, stime, cutime and cstime are the 11th to 14th.
        let (ppid, times) = (f[0] as i64, f[10] + f[11]);
        if pid == postmaster {
            ticks += times + f[12] + f[13];
        } else if ppid == postmaster {
            ticks += times;
        }
    }
    Duration::from_secs_f64(ticks as f64 / tick)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(RUNNER_ARG) {
        return runner_process(&args[2..]);
    }
    let quick = args.iter().any(|a| a == "quick");
    let list_jobs = if quick { 10_000 } else { 100_000 };
    pg_server::server().expect("PostgreSQL is needed for this bench (apt-get install postgresql)");

    for (runners, slots) in [(1, 1), (4, 1), (4, 8)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("jobs.db");
        let sqlite = steps(
            runners,
            slots,
            Kind::Sqlite,
            path.to_str().expect("a UTF-8 path"),
        );
        let url = pg_server::fresh_database().expect("PostgreSQL");
        PostgresStore::migrate(&PgUrl::parse(&url).expect("url")).expect("migrate");
        let pg = steps(runners, slots, Kind::Postgres, &url);
        println!(
            "claims, {runners} runner process(es) of {slots} slot(s), {CLAIM_JOBS} jobs: PostgreSQL {:>5.0} steps/s \
             (CPU a step: runners {:.0} µs, server {:.0} µs), SQLite {:>5.0} steps/s (runners {:.0} µs)",
            pg.steps_per_s, pg.runners_us, pg.server_us, sqlite.steps_per_s, sqlite.runners_us,
        );
    }
    if args.iter().any(|a| a == "claims") {
        return;
    }

    let url = fresh_pg();
    let lat = latency(Arc::from(pg_store(&url)), pg_store(&url), 200);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    let lat_sqlite = latency(
        Arc::new(SqliteStore::open(&path).expect("open")),
        Box::new(SqliteStore::open(&path).expect("open")),
        200,
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "created → claimed by an idle runner (200): PostgreSQL p50 {:.1} ms, p99 {:.1} ms; \
         SQLite (same process, its wake-up) p50 {:.1} ms, p99 {:.1} ms",
        ms(pct(&lat, 50)),
        ms(pct(&lat, 99)),
        ms(pct(&lat_sqlite, 50)),
        ms(pct(&lat_sqlite, 99))
    );

    let url = fresh_pg();
    let pg = pg_store(&url);
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = SqliteStore::open(dir.path().join("jobs.db")).expect("open");
    let filled = Instant::now();
    for i in 0..list_jobs {
        let j = job(i, "");
        create(&*pg, &j);
        create(&sqlite, &j);
    }
    let fill = filled.elapsed();
    let best = |s: &dyn JobStore| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                assert_eq!(
                    s.list(&ListFilter::default()).expect("list").len(),
                    list_jobs
                );
                t.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    println!(
        "list, {list_jobs} jobs (best of 5): PostgreSQL {:.1} ms, SQLite {:.1} ms (filled both in {:.0} s)",
        ms(best(&*pg)),
        ms(best(&sqlite)),
        fill.as_secs_f64()
    );

    // Idle: a runner waiting for work with nothing to do, as `job run` does between polls.
    let url = fresh_pg();
    let idle = pg_store(&url);
    let before = cpu();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        let since = idle.work_seen();
        if idle
            .claim("runner-idle", None, TTL)
            .expect("claim")
            .is_none()
        {
            idle.wait_for_work(since, Duration::from_millis(500));
        }
    }
    let used = cpu() - before;
    println!(
        "idle runner, 5 s on PostgreSQL: {:.3} % of a core (two connections: one for queries, one LISTENing)",
        used.as_secs_f64() / t.elapsed().as_secs_f64() * 100.0
    );
}
