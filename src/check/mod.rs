//! Checks: the cheap, deterministic half of an audit (seed 003 §5.2's hybrid validator). A
//! check is a shell command — `cargo test`, `npm run lint` — run in the workdir after the
//! worker and before the auditor; any failing check is a RETRY whose critique is the check's
//! name, exit status and output tail, and no auditor is paid for. When all pass, the auditor's
//! prompt carries their results and the policy sees them as `ctx.checks`.
//!
//! Where checks come from: the policy's `checks` (a list, or a hook returning one), then the
//! session's own (`--check CMD`, `check = [...]` in oneshot.toml), a command given twice run
//! once. This module holds what a check is and what it found, the texts made from them, and
//! the runner ([`run`]) that the session engine and `job land` share.

mod run;

pub use run::run_here;
pub(crate) use run::{CheckSite, Stop, run};

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a check may run when it names no timeout of its own: a test suite, not a build
/// of the world.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// How much of a check's output the critique and the auditor's prompt carry (its end).
pub const CRITIQUE_TAIL: usize = 4 * 1024;

/// One check: a command run with `sh -c` in the workdir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// What reports call it (`tests`); the command itself when not named.
    pub name: String,
    /// The shell command.
    pub run: String,
    /// How long it may run, in seconds ([`DEFAULT_TIMEOUT`] when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

impl Check {
    /// A check of `command`, named after it.
    pub fn command(command: &str) -> Check {
        Check {
            name: command.trim().to_string(),
            run: command.trim().to_string(),
            timeout_secs: None,
        }
    }

    /// How long it may run.
    pub fn timeout(&self) -> Duration {
        self.timeout_secs
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs)
    }
}

/// `first` then the checks of `then` whose command is not already there: the policy's list,
/// then the session's.
pub fn merge(first: &[Check], then: &[Check]) -> Vec<Check> {
    let mut out = first.to_vec();
    for c in then {
        if !out.iter().any(|o| o.run == c.run) {
            out.push(c.clone());
        }
    }
    out
}

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The check's name.
    pub name: String,
    /// Its command.
    pub run: String,
    /// The exit code, when it exited normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Why it did not finish by itself: `timeout`, `interrupted`, or `spawn: <error>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// How long it ran.
    pub duration_ms: u64,
    /// The end of its output, both streams (redacted).
    #[serde(default)]
    pub tail: String,
}

impl CheckResult {
    /// It ran to the end and exited 0.
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && self.stopped.is_none()
    }

    /// The user stopped it: it says nothing about the work.
    pub fn interrupted(&self) -> bool {
        self.stopped.as_deref() == Some("interrupted")
    }

    /// `exit 1`, `killed by signal 9`, `timed out after 600 s`, …
    pub fn status(&self) -> String {
        match (&self.stopped, self.exit_code, self.signal) {
            (Some(s), _, _) if s == "timeout" => "timed out".to_string(),
            (Some(s), _, _) => s.clone(),
            (None, Some(code), _) => format!("exit {code}"),
            (None, None, Some(sig)) => format!("killed by signal {sig}"),
            (None, None, None) => "ended without a status".to_string(),
        }
    }

    /// The last [`CRITIQUE_TAIL`] bytes of its output, from a line start when one fits.
    pub fn short_tail(&self) -> &str {
        let t = self.tail.trim_end();
        if t.len() <= CRITIQUE_TAIL {
            return t;
        }
        let mut at = t.len() - CRITIQUE_TAIL;
        while !t.is_char_boundary(at) {
            at += 1;
        }
        let cut = &t[at..];
        cut.find('\n').map_or(cut, |n| &cut[n + 1..])
    }
}

/// The first check that failed, if any (the user's interrupt is not a failure).
pub fn first_failure(results: &[CheckResult]) -> Option<&CheckResult> {
    results.iter().find(|r| !r.passed() && !r.interrupted())
}

/// The critique of a RETRY made by failing checks: each failed check's name, status and the
/// end of its output — what the worker gets in its next prompt.
pub fn critique(results: &[CheckResult]) -> String {
    let mut out = String::new();
    for r in results.iter().filter(|r| !r.passed()) {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!(
            "check `{}` failed ({}): `{}`\n{}",
            r.name,
            r.status(),
            r.run,
            r.short_tail()
        ));
    }
    out
}

/// The section the auditor's prompt ends with when every check passed: it judges the work
/// knowing what the machine already verified.
pub fn prompt_section(results: &[CheckResult]) -> String {
    let mut out = String::from(
        "Checks that already ran on this work (all passed; judge what they cannot check):",
    );
    for r in results {
        out.push_str(&format!(
            "\n- {} (`{}`): {} in {:.1} s",
            r.name,
            r.run,
            r.status(),
            r.duration_ms as f64 / 1000.0
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, code: i32, tail: &str) -> CheckResult {
        CheckResult {
            name: name.into(),
            run: format!("run {name}"),
            exit_code: Some(code),
            signal: None,
            stopped: None,
            duration_ms: 1500,
            tail: tail.into(),
        }
    }

    #[test]
    fn a_critique_names_each_failed_check_with_its_status_and_output() {
        let rs = [result("lint", 0, "ok"), result("tests", 2, "1 failed\n")];
        assert_eq!(first_failure(&rs).unwrap().name, "tests");
        let c = critique(&rs);
        assert_eq!(c, "check `tests` failed (exit 2): `run tests`\n1 failed");
    }

    #[test]
    fn an_interrupted_check_is_not_a_failure_of_the_work() {
        let mut r = result("tests", 0, "");
        r.exit_code = None;
        r.stopped = Some("interrupted".into());
        assert!(!r.passed() && r.interrupted());
        assert!(first_failure(&[r]).is_none());
    }

    #[test]
    fn merge_keeps_the_first_of_each_command() {
        let a = [Check::command("cargo test")];
        let b = [
            Check::command("cargo test"),
            Check::command("cargo fmt --check"),
        ];
        let m = merge(&a, &b);
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].run, "cargo fmt --check");
    }

    #[test]
    fn a_long_tail_is_cut_at_a_line() {
        let long = format!("{}\nlast line", "x".repeat(CRITIQUE_TAIL * 2));
        let r = result("t", 1, &long);
        assert_eq!(r.short_tail(), "last line");
        assert!(prompt_section(&[r]).contains("t (`run t`): exit 1 in 1.5 s"));
    }
}
