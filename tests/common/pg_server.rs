//! A real PostgreSQL for tests: one temporary cluster per test process, started at the first
//! use ([`server`]; a test that restarts its server starts one of its own, [`own_server`]) from Debian's `postgresql` binaries (on PATH, in `/usr/lib/postgresql/*/bin`, or in
//! `$ONESHOT_TEST_PG_BIN`), listening only on a Unix socket in a temporary directory, with
//! `fsync` off; each test gets a database of its own ([`fresh_database`]). The server stops
//! when the test process ends, however it ends: it runs under a shell that holds a pipe from
//! this process and shuts the server down when the pipe closes.
//!
//! Without the binaries the PostgreSQL tests skip (saying so) — except in CI (`CI` set), where
//! a missing PostgreSQL fails them: CI installs it.
//!
//! Shared by the library's unit tests and the integration tests (`#[path]`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The running test cluster.
pub struct PgServer {
    /// The directory of its Unix socket.
    pub socket_dir: PathBuf,
    /// Its port (part of the socket's name).
    pub port: u16,
    /// The superuser tests connect as.
    pub user: String,
    /// The data directory (and the socket directory): removed by the server's shell at the end.
    _root: PathBuf,
    /// The `pg_ctl` options that start it, for [`PgServer::restart`].
    options: String,
    /// Its data directory.
    data: PathBuf,
    /// Where its programs are.
    bin: PathBuf,
    /// The shell holding the server; its stdin is the pipe that keeps the server up.
    _keeper: Child,
}

static SERVER: OnceLock<Option<PgServer>> = OnceLock::new();
static DATABASES: AtomicU32 = AtomicU32::new(0);

/// The cluster, started at the first call; `None` (after saying why) when PostgreSQL is not
/// installed and this is not CI.
pub fn server() -> Option<&'static PgServer> {
    SERVER
        .get_or_init(|| match bin_dir() {
            Some(bin) => Some(start(&bin)),
            None if std::env::var_os("CI").is_some() => panic!(
                "PostgreSQL is not installed (no initdb on PATH, in /usr/lib/postgresql/*/bin or \
                 in ONESHOT_TEST_PG_BIN); CI installs Debian's postgresql package"
            ),
            None => {
                eprintln!(
                    "skipping the PostgreSQL tests: PostgreSQL is not installed (apt-get install \
                     postgresql, or set ONESHOT_TEST_PG_BIN to its bin directory)"
                );
                None
            }
        })
        .as_ref()
}

/// A new, empty database on the cluster, as a URL for `--store`; `None` when there is no
/// cluster (see [`server`]).
pub fn fresh_database() -> Option<String> {
    Some(server()?.database())
}

/// A cluster of the caller's own, stopped and removed when it is dropped: for a test that
/// restarts its server, which the tests sharing the process's cluster must not see. `None`
/// where [`server`] would be.
pub fn own_server() -> Option<PgServer> {
    server()?;
    Some(start(&bin_dir()?))
}

impl PgServer {
    /// A new, empty database on this cluster, as a URL for `--store`.
    pub fn database(&self) -> String {
        let name = format!(
            "t_{}_{}",
            std::process::id(),
            DATABASES.fetch_add(1, Ordering::SeqCst)
        );
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(&self.socket_dir)
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                &self.user,
                "-d",
                "postgres",
                "-c",
            ])
            .arg(format!("CREATE DATABASE {name}"))
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "create database {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.url(&name)
    }

    /// Restarts the server (`pg_ctl restart -m fast`: every connection is cut), waiting until
    /// it takes connections again; `down` is how long it stays stopped in between.
    pub fn restart(&self, down: Duration) {
        let q = |p: &Path| format!("'{}'", p.display());
        let stop = as_server_user(&format!(
            "{} -D {} -m fast -w stop",
            q(&self.bin.join("pg_ctl")),
            q(&self.data)
        ))
        .output()
        .expect("pg_ctl stop");
        assert!(stop.status.success(), "pg_ctl stop: {stop:?}");
        std::thread::sleep(down);
        let start = as_server_user(&format!(
            "{} -D {} -l {} -o \"{}\" -w start",
            q(&self.bin.join("pg_ctl")),
            q(&self.data),
            q(&self._root.join("server.log")),
            self.options
        ))
        .stdout(Stdio::null())
        .output()
        .expect("pg_ctl start");
        assert!(start.status.success(), "pg_ctl start: {start:?}");
    }

    /// The URL of database `name`.
    pub fn url(&self, name: &str) -> String {
        format!(
            "postgres://{}@localhost/{name}?host={}&port={}",
            self.user,
            self.socket_dir.display(),
            self.port
        )
    }
}

/// Where the server's programs are.
fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("ONESHOT_TEST_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    versions.sort();
    if let Some(dir) = versions.pop() {
        return Some(dir);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
}

/// PostgreSQL refuses to run as root: then the server runs as the `postgres` user.
fn as_server_user(cmd: &str) -> Command {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", "sh", "-c", cmd]);
        c
    } else {
        let mut c = Command::new("sh");
        c.args(["-c", cmd]);
        c
    }
}

fn start(bin: &Path) -> PgServer {
    // A directory per cluster: a process may hold its shared one and others of its own.
    static CLUSTERS: AtomicU32 = AtomicU32::new(0);
    let root = std::env::temp_dir().join(format!(
        "oneshot-pg-{}-{}",
        std::process::id(),
        CLUSTERS.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("make the cluster's directory");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let ok = Command::new("chown")
            .args(["postgres:postgres"])
            .arg(&root)
            .status()
            .expect("chown")
            .success();
        assert!(ok, "chown the cluster's directory to postgres");
    }
    let data = root.join("data");
    let user = "oneshot_test".to_string();
    let q = |p: &Path| format!("'{}'", p.display());
    let out = as_server_user(&format!(
        "{} -D {} -U {user} --auth=trust -E UTF8 --no-sync --no-instructions",
        q(&bin.join("initdb")),
        q(&data)
    ))
    .stdout(Stdio::null())
    .output()
    .expect("run initdb");
    assert!(
        out.status.success(),
        "initdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A port per process: the socket file's name carries it (in the cluster's own directory,
    // so the clusters of one process do not meet).
    let port = 20_000 + (std::process::id() % 20_000) as u16;
    // The shell starts the server (`pg_ctl`, so that a restart is the same server to it) and
    // reads its stdin, a pipe this process holds: at EOF (this process ended, however it
    // ended) it stops the server — whichever postmaster runs then — and removes the cluster.
    let options = format!(
        "-k {root} -p {port} -c listen_addresses= -c fsync=off -c synchronous_commit=off \
         -c full_page_writes=off -c max_connections=300",
        root = root.display()
    );
    let script = format!(
        "{pg_ctl} -D {data} -l {log} -o \"{options}\" start > /dev/null 2>&1; cat > /dev/null; \
         {pg_ctl} -D {data} -m fast stop > /dev/null 2>&1; rm -rf {root}",
        pg_ctl = q(&bin.join("pg_ctl")),
        data = q(&data),
        log = q(&root.join("server.log")),
        root = q(&root),
    );
    let keeper = as_server_user(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start postgres");
    let server = PgServer {
        socket_dir: root.clone(),
        port,
        user,
        _root: root.clone(),
        _keeper: keeper,
        options,
        data,
        bin: bin.to_path_buf(),
    };
    // Ready when psql gets in.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ok = Command::new(bin.join("psql"))
            .args(["-X", "-q", "-h"])
            .arg(&root)
            .args([
                "-p",
                &port.to_string(),
                "-U",
                &server.user,
                "-d",
                "postgres",
                "-c",
                "SELECT 1",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return server;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(root.join("server.log")).unwrap_or_default();
            panic!("PostgreSQL did not start within 60 s: {log}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
