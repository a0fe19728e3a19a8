//! A command sink: the event as JSON on the command's stdin, a few `ONESHOT_NOTIFY_*`
//! variables beside it, in a process group of its own that is killed whole at its timeout.
//! Like an agent, it never inherits a dashboard token or anything holding one
//! (`crate::token::withheld_env`): a notification must not hand a hook the keys to approve.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What a sink's process is told besides the JSON: name and value.
pub(super) type Vars<'a> = [(&'a str, &'a str)];

/// Runs `line` in `dir` with `json` on its stdin; success is exit status 0 within `timeout`.
/// Why not, in words (with the end of what it printed on stderr).
pub(super) async fn run(
    line: &str,
    dir: &Path,
    json: &str,
    vars: &Vars<'_>,
    timeout: Duration,
) -> Result<(), String> {
    let argv = shell_words::split(line).map_err(|e| format!("`{line}` does not split: {e}"))?;
    let Some((program, args)) = argv.split_first() else {
        return Err("the command is empty".into());
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for name in crate::token::withheld_env() {
        cmd.env_remove(name);
    }
    for (k, v) in std::env::vars_os() {
        if v.to_str().is_some_and(crate::token::holds_secret) {
            cmd.env_remove(k);
        }
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("`{line}` could not start: {e}"))?;
    let pid = child.id();
    let mut stdin = child.stdin.take();
    let mut stderr = child.stderr.take();
    let body = json.as_bytes().to_vec();
    let ran = async {
        if let Some(mut s) = stdin.take() {
            // A command that does not read its stdin is no failure: it may not care.
            let _ = s.write_all(&body).await;
            let _ = s.shutdown().await;
        }
        let mut err = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.take(64 * 1024).read_to_end(&mut err).await;
        }
        (child.wait().await, err)
    };
    match tokio::time::timeout(timeout, ran).await {
        Ok((Ok(status), _)) if status.success() => Ok(()),
        Ok((Ok(status), err)) => {
            let err = String::from_utf8_lossy(&err);
            let tail: String = {
                let t = err.trim();
                let cut = t.char_indices().rev().nth(199).map_or(0, |(i, _)| i);
                t[cut..].to_string()
            };
            Err(format!(
                "`{line}` failed ({status}){}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            ))
        }
        Ok((Err(e), _)) => Err(format!("`{line}`: {e}")),
        Err(_) => {
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            Err(format!(
                "`{line}` did not end within {}; its process group was killed",
                humantime::format_duration(timeout)
            ))
        }
    }
}
