//! A running `oneshot serve` for tests: started on a free port of 127.0.0.1 through the real
//! binary, its address and one-time sign-in link read as it prints them, killed when dropped.
#![allow(dead_code)]

use super::job_env::Env;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

/// A running `oneshot serve`, killed when dropped.
pub struct Server {
    pub child: Child,
    /// `127.0.0.1:PORT`, what the Host header says.
    pub host: String,
    /// The sign-in link printed at start.
    pub link: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.host)
    }
}

/// `oneshot serve` on a free port, with `extra` flags.
pub fn serve(env: &Env, extra: &[&str]) -> Server {
    serve_at(env, "127.0.0.1:0", extra)
}

/// `oneshot serve` listening on `listen` (a restarted server takes its old port back).
pub fn serve_at(env: &Env, listen: &str, extra: &[&str]) -> Server {
    let mut args = vec!["serve", "--listen", listen];
    args.extend_from_slice(extra);
    let mut child = env
        .command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let listening = lines.next().expect("a first line").unwrap();
    let host = listening
        .strip_prefix("listening on http://")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{listening}"))
        .to_string();
    let signin = lines.next().expect("a second line").unwrap();
    let link = signin
        .strip_prefix("sign in: ")
        .unwrap_or_else(|| panic!("{signin}"))
        .to_string();
    Server { child, host, link }
}
