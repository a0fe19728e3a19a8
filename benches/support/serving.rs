//! A `oneshot serve` a bench talks to: started from a prepared command, its address read from
//! the line it prints first.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Starts `serve` (a `oneshot … serve --listen 127.0.0.1:0 …` command) and returns it with
/// the `127.0.0.1:PORT` it listens on. The rest of its output is drained in the background.
pub fn start(mut serve: Command) -> (Child, String) {
    let mut child = serve
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("oneshot serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("a first line").expect("a line");
    let host = first
        .strip_prefix("listening on http://")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    std::thread::spawn(move || for _ in lines {});
    (child, host)
}
