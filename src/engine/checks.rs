//! Carrying out [`Effect::Check`](crate::session::Effect::Check): the audit's checks run one
//! after another in the workdir, their output into the log as the audit's activity, and the
//! user's interrupt heard while they run (the first stops the running check, a second kills it).

use super::interrupt::Ask;
use super::{Engine, EngineError, Observer, Update};
use crate::check::{Check, CheckResult, CheckSite};
use crate::executor::Control;

/// Time between SIGTERM and SIGKILL for a check the user stops.
const GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The session's interrupts, heard while a check runs.
struct Interrupts<'a>(&'a mut tokio::sync::mpsc::UnboundedReceiver<Ask>);

impl crate::check::Stop for Interrupts<'_> {
    async fn ask(&mut self) -> Option<Control> {
        match self.0.recv().await {
            Some(Ask::Stop) => Some(Control::Stop(GRACE)),
            Some(Ask::Kill) => Some(Control::Kill),
            None => None,
        }
    }
}

impl Engine {
    /// Runs `checks` for `iteration`, telling `observer` as each starts and ends.
    pub(super) async fn run_checks(
        &mut self,
        checks: Vec<Check>,
        iteration: u32,
        observer: &mut dyn Observer,
    ) -> Result<Vec<CheckResult>, EngineError> {
        self.durable()?;
        let site = CheckSite {
            workdir: self.session.workdir.clone(),
            session_id: self.session.id.clone(),
            iteration,
            confine: self.confine.clone(),
            gateway: self.egress.check_gateway(
                if self.session.settings.network == crate::process::NetworkMode::None {
                    Default::default()
                } else {
                    self.slot.current().network_rules().clone()
                },
            ),
            base_env: self.confine.is_some().then(|| {
                std::sync::Arc::new(
                    crate::sandbox::env::filter(
                        std::env::vars_os(),
                        self.slot.current().env_rules(),
                        &[],
                    )
                    .kept,
                )
            }),
            limits: self.slot.current().limits().agent(),
        };
        let mut results = Vec::with_capacity(checks.len());
        for check in &checks {
            observer.update(Update::Note(format!(
                "check `{}`: running `{}`",
                check.name,
                self.redactor.redact(&check.run)
            )));
            observer.flush();
            let mut ran = crate::check::run(
                std::slice::from_ref(check),
                &site,
                &self.redactor,
                &mut self.log,
                &mut Interrupts(&mut self.interrupts),
            )
            .await
            .map_err(|e| self.log_error(e))?;
            let Some(result) = ran.pop() else { continue };
            let line = format!(
                "check `{}`: {} ({}) in {:.1} s",
                result.name,
                if result.passed() { "passed" } else { "failed" },
                result.status(),
                result.duration_ms as f64 / 1000.0
            );
            observer.update(if result.passed() {
                Update::Note(line)
            } else {
                Update::Warning(line)
            });
            observer.flush();
            let stopped = result.interrupted();
            results.push(result);
            if stopped {
                break;
            }
        }
        Ok(results)
    }
}
