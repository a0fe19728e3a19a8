//! A real browser for tests: Debian's `chromium`, headless, driven over WebDriver through a
//! `chromedriver` this process starts on a free port of 127.0.0.1 and kills when the
//! [`Browser`] is dropped (its whole process group, so no chromium outlives a failed test).
//!
//! Without `chromedriver` (on PATH, or named by `$ONESHOT_TEST_CHROMEDRIVER`) the browser
//! tests skip, saying so — except in CI (`CI` set), where a missing driver fails them: CI
//! installs Debian's `chromium` and `chromium-driver`.
#![allow(dead_code)]

use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A chromedriver process and one browser session on it. Dropped in field order: the
/// session's connection, then the driver (killed), then chromium's profile directory.
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    _driver: Driver,
    /// Chromium's profile.
    _profile: tempfile::TempDir,
}

/// A running chromedriver, leading its own process group (chromium and its helpers are in
/// it): the whole group is killed when this is dropped, however the test ends.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The chromedriver program, or `None` (after saying why) when it is not installed and this is
/// not CI.
fn chromedriver() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ONESHOT_TEST_CHROMEDRIVER") {
        return Some(PathBuf::from(p));
    }
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("chromedriver"))
            .find(|p| p.is_file())
    });
    match found {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => panic!(
            "chromedriver is not installed (not on PATH, and ONESHOT_TEST_CHROMEDRIVER is not \
             set); CI installs Debian's chromium and chromium-driver packages"
        ),
        None => {
            eprintln!(
                "skipping the browser tests: chromedriver is not installed (apt-get install \
                 chromium chromium-driver, or set ONESHOT_TEST_CHROMEDRIVER to a chromedriver)"
            );
            None
        }
    }
}

/// A port of 127.0.0.1 free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts chromedriver and a headless chromium session on it; `None` when chromedriver is not
/// installed outside CI (see [`chromedriver`]).
pub async fn start() -> Option<Browser> {
    start_with(&[]).await
}

/// [`start`] with more chromium flags (e.g. `--host-resolver-rules=…`, a name that resolves to
/// a loopback address, for a DNS-rebinding test). A port is free only "a moment ago": another
/// process may take it before chromedriver binds it (its session then fails to connect), so a
/// failed start is tried again on a new port, twice.
pub async fn start_with(extra: &[&str]) -> Option<Browser> {
    let program = chromedriver()?;
    let mut last = String::new();
    for _ in 0..3 {
        match one_try(&program, extra).await {
            Ok(b) => return Some(b),
            Err(e) => last = e,
        }
    }
    panic!("a chromium session through chromedriver: {last}");
}

/// One start of chromedriver and a chromium session on a fresh port.
async fn one_try(program: &std::path::Path, extra: &[&str]) -> Result<Browser, String> {
    let port = free_port();
    let mut cmd = Command::new(program);
    cmd.arg(format!("--port={port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let driver = Driver(
        cmd.spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", program.display())),
    );
    let profile = tempfile::tempdir().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{} did not listen on 127.0.0.1:{port} within 15 s",
            program.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut args: Vec<String> = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--window-size=1280,900",
    ]
    .map(String::from)
    .to_vec();
    args.push(format!("--user-data-dir={}", profile.path().display()));
    args.extend(extra.iter().map(|a| a.to_string()));
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".to_string(),
        serde_json::json!({ "args": args }),
    );
    let client = ClientBuilder::new(HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .map_err(|e| e.to_string())?;
    Ok(Browser {
        client,
        _driver: driver,
        _profile: profile,
    })
}

impl Browser {
    /// The HTTP status of the page now shown (the navigation's response, as the browser saw it).
    pub async fn status(&self) -> u16 {
        let v = self
            .client
            .execute(
                "return performance.getEntriesByType('navigation')[0].responseStatus;",
                vec![],
            )
            .await
            .unwrap();
        v.as_u64()
            .unwrap_or_else(|| panic!("no response status: {v}")) as u16
    }

    /// The visible text of the page now shown.
    pub async fn text(&self) -> String {
        self.client
            .find(fantoccini::Locator::Css("body"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// A screenshot of the page now shown, written as `NAME.png` under the target directory's
    /// `browser-artifacts/`; its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.unwrap();
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 1000,
            "a screenshot is a PNG ({} bytes)",
            png.len()
        );
        let dir = artifacts();
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }

    /// Ends the browser session (chromium quits); the driver stops when dropped.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

/// `browser-artifacts/` in the target directory this test binary was built in
/// (`target/debug/deps/browser-…` → `target/browser-artifacts`).
pub fn artifacts() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target: &Path = exe
        .ancestors()
        .nth(3)
        .unwrap_or_else(|| panic!("no target directory above {}", exe.display()));
    target.join("browser-artifacts")
}
