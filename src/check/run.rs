//! Running checks: each a real process in its own group (the same executor that runs the
//! agents: confined, reaped, never outliving oneshot), its output through the redacting
//! pipeline into the session's log as the audit's activity, stopped at its timeout.

use super::{Check, CheckResult};
use crate::executor::{
    CommandTemplate, Control, Invocation, ProcessEvent, Role, StdinMode, confine::Confinement,
};
use crate::pipeline::{Pipeline, RecordSink, Redactor, RunMeta, now_ms};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Who may stop the checks while they run: the session's interrupts, or nobody.
pub(crate) trait Stop {
    /// The next ask: `Some(Control::Stop(_))` stops the running check gracefully,
    /// `Some(Control::Kill)` kills it; `None` when no ask can come any more.
    async fn ask(&mut self) -> Option<Control>;
}

/// Nobody stops them (a land's checks end by themselves or at their timeout).
struct Unstoppable;

impl Stop for Unstoppable {
    async fn ask(&mut self) -> Option<Control> {
        None
    }
}

/// How long a check stopped at its timeout has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// Where and as what checks run.
#[derive(Debug, Clone)]
pub(crate) struct CheckSite {
    /// The directory they run in (the workdir, or the job's worktree).
    pub(crate) workdir: PathBuf,
    /// env `ONESHOT_SESSION_ID` (a job's id when a land runs them).
    pub(crate) session_id: String,
    /// env `ONESHOT_ITERATION`, and the iteration their activity records name.
    pub(crate) iteration: u32,
    /// Where they may write (Landlock), as the agents; `None` runs them unconfined.
    pub(crate) confine: Option<Confinement>,
    /// Their way out, as the agents' (the policy's `network` lists decide: a check runs while
    /// the session waits for it, so no hook is asked); `None`: the network as oneshot has it.
    pub(crate) gateway: Option<std::sync::Arc<dyn crate::sandbox::Gateway>>,
    /// The environment they start from, credentials left out as for the agents.
    pub(crate) base_env: Option<std::sync::Arc<Vec<(std::ffi::OsString, std::ffi::OsString)>>>,
    /// The policy's per-agent limits, which bound each check as they bound an agent.
    pub(crate) limits: crate::sandbox::limits::AgentLimits,
}

/// Runs `checks` in order at `site`, every line of output redacted by `redactor` and logged to
/// `log` as activity of the audit (role `auditor`, executor `check`). `stop` is polled while a
/// check runs: `Some(Control::Stop(_))` stops it gracefully, `Some(Control::Kill)` kills it;
/// the checks after a stopped one do not run. Must be called inside a tokio runtime (spawns
/// happen on the calling thread: see [`Invocation::spawn`]).
pub(crate) async fn run(
    checks: &[Check],
    site: &CheckSite,
    redactor: &Arc<Redactor>,
    log: &mut impl RecordSink,
    stop: &mut impl Stop,
) -> std::io::Result<Vec<CheckResult>> {
    let mut out = Vec::with_capacity(checks.len());
    for check in checks {
        let result = run_one(check, site, redactor, log, stop).await?;
        let interrupted = result.interrupted();
        out.push(result);
        if interrupted {
            break;
        }
    }
    Ok(out)
}

async fn run_one(
    check: &Check,
    site: &CheckSite,
    redactor: &Arc<Redactor>,
    log: &mut impl RecordSink,
    stop: &mut impl Stop,
) -> std::io::Result<CheckResult> {
    let started = Instant::now();
    let mut result = CheckResult {
        name: check.name.clone(),
        run: redactor.redact(&check.run).into_owned(),
        exit_code: None,
        signal: None,
        stopped: None,
        duration_ms: 0,
        tail: String::new(),
    };
    let invocation = Invocation {
        role: Role::Auditor,
        command: match CommandTemplate::from_argv(vec!["sh".into(), "-c".into(), check.run.clone()])
        {
            Ok(c) => c,
            Err(e) => {
                result.stopped = Some(format!("spawn: {}", crate::error::failure(&e)));
                return Ok(result);
            }
        },
        prompt: String::new(),
        session_id: site.session_id.clone(),
        iteration: site.iteration,
        workdir: site.workdir.clone(),
        env: vec![("ONESHOT_CHECK_NAME".into(), check.name.clone())],
        stdin: StdinMode::Empty,
        confine: site.confine.clone(),
        gateway: site.gateway.clone(),
        base_env: site.base_env.clone(),
        limits: site.limits,
    };
    let mut supervised = match invocation.spawn() {
        Ok(running) => running.supervise(),
        Err(e) => {
            let message = redactor.redact(&crate::error::failure(&e)).into_owned();
            result.stopped = Some(format!("spawn: {message}"));
            return Ok(result);
        }
    };
    let meta = RunMeta {
        role: "auditor",
        iteration: site.iteration,
        executor: "check".into(),
    };
    let mut pipeline = Pipeline::new(meta, Arc::clone(redactor));
    let deadline = started + check.timeout();
    let mut asked = false;
    loop {
        tokio::select! {
            ev = supervised.events.recv() => match ev {
                Some(ProcessEvent::Output(stream, bytes)) => {
                    pipeline.push(stream, &bytes, now_ms(), log, None)?;
                    supervised.recycle(bytes);
                }
                // Killed already; its exit follows. The check fails with who reached what.
                Some(ProcessEvent::LimitReached(words)) => {
                    result.stopped = Some(format!("stopped: {words}"));
                }
                ended => {
                    if let Some(ProcessEvent::Exited { code, signal }) = ended {
                        result.exit_code = code;
                        result.signal = signal;
                    }
                    break;
                }
            },
            _ = tokio::time::sleep_until(deadline), if result.stopped.is_none() => {
                result.stopped = Some("timeout".into());
                supervised.control(Control::Stop(GRACE));
            }
            ask = stop.ask(), if !asked => match ask {
                Some(c) => {
                    // A second ask kills at once, whatever it asked.
                    let c = if result.interrupted() { Control::Kill } else { c };
                    result.stopped = Some("interrupted".into());
                    supervised.control(c);
                    asked = matches!(c, Control::Kill);
                }
                None => asked = true,
            },
        }
    }
    pipeline.finish(now_ms(), log, None)?;
    result.tail = pipeline.tail().to_string();
    result.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(result)
}

/// A log that keeps nothing: checks run outside a session keep their output in their results.
struct Discard;

impl RecordSink for Discard {
    fn append_encoded(&mut self, _encode: impl FnOnce(&mut Vec<u8>)) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `checks` in `workdir` to the end (none can be stopped but by its timeout), each
/// one's output redacted into its result only: for callers outside a session (`job land`).
/// `id` marks their processes (`ONESHOT_SESSION_ID`): whatever still carries it when a check
/// ends is killed, so it must be an id of their own.
/// Blocking: it makes a runtime of its own on the calling thread, which must live as long as
/// the checks (see [`Invocation::spawn`]).
pub fn run_here(
    checks: &[Check],
    workdir: &std::path::Path,
    id: &str,
    redactor: &Arc<Redactor>,
) -> std::io::Result<Vec<CheckResult>> {
    let site = CheckSite {
        workdir: workdir.to_path_buf(),
        session_id: id.to_string(),
        iteration: 0,
        confine: None,
        gateway: None,
        base_env: None,
        limits: Default::default(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut out = Vec::with_capacity(checks.len());
    for check in checks {
        let mut one = rt.block_on(run(
            std::slice::from_ref(check),
            &site,
            redactor,
            &mut Discard,
            &mut Unstoppable,
        ))?;
        out.append(&mut one);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Arc<Redactor> {
        Arc::new(Redactor::new(&[], vec!["hunter2-very-secret-value".into()]).unwrap())
    }

    #[test]
    fn a_check_runs_in_its_directory_and_its_output_is_redacted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("marker"), "here").unwrap();
        let checks = [
            Check::command("cat marker; echo hunter2-very-secret-value; exit 3"),
            Check::command("sleep 0.5; echo fine"),
        ];
        // Ids of their own: the end of a run sweeps whatever still carries its id.
        let r = run_here(&checks, dir.path(), "check-test-1", &redactor()).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].exit_code, Some(3));
        assert!(!r[0].passed());
        assert!(r[0].tail.contains("here"), "{:?}", r[0].tail);
        assert!(!r[0].tail.contains("hunter2"), "{:?}", r[0].tail);
        assert!(r[1].passed(), "{:?}", r[1]);
    }

    #[test]
    fn a_check_past_its_timeout_is_stopped_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let check = Check {
            timeout_secs: Some(1),
            ..Check::command("echo started; sleep 30")
        };
        let started = std::time::Instant::now();
        let r = run_here(&[check], dir.path(), "check-test-2", &redactor()).unwrap();
        assert!(started.elapsed() < Duration::from_secs(15));
        assert_eq!(r[0].stopped.as_deref(), Some("timeout"), "{:?}", r[0]);
        assert_eq!(r[0].status(), "timed out");
        assert!(r[0].tail.contains("started"));
    }
}
