//! Carrying out [`Effect::Check`](crate::session::Effect::Check): the audit's checks run one
//! after another in the workdir, their output into the log as the audit's activity, and the
//! user's interrupt heard while they run (the first stops the running check, a second kills it).

use super::interrupt::Ask;
use super::{Engine, EngineError, Observer, Update};
use crate::check::{Check, CheckResult, CheckSite};
use crate::executor::Control;
use crate::session::Effect;

/// Time between SIGTERM and SIGKILL for a check the user stops.
const GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// What the session hears while a check runs: the user's interrupts, and the questions of the
/// check's egress proxy, answered by the decision core as an agent's are (the other effects of
/// those steps — the hook's decision records — are carried out once the check ends).
struct Waits<'a> {
    interrupts: &'a mut tokio::sync::mpsc::UnboundedReceiver<Ask>,
    interrupts_open: bool,
    egress: &'a mut super::egress::Egress,
    core: super::Core<'a>,
    later: Vec<Effect>,
}

impl crate::check::Stop for Waits<'_> {
    async fn ask(&mut self) -> Option<Control> {
        loop {
            tokio::select! {
                ask = self.interrupts.recv(), if self.interrupts_open => match ask {
                    Some(Ask::Stop) => return Some(Control::Stop(GRACE)),
                    Some(Ask::Kill) => return Some(Control::Kill),
                    None => self.interrupts_open = false,
                },
                Some(ask) = self.egress.asks.recv() => {
                    let event = self.egress.asked(ask);
                    for effect in self.core.step(event) {
                        match effect {
                            Effect::Egress { ask, allow, rule, private_ok } => {
                                self.egress.answer(ask, super::egress::answer(allow, rule, private_ok));
                            }
                            other => self.later.push(other),
                        }
                    }
                }
                else => return None,
            }
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
            gateway: self.egress.check_gateway(),
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
            let mut waits = Waits {
                interrupts: &mut self.interrupts,
                interrupts_open: true,
                egress: &mut self.egress,
                core: super::Core {
                    session: &mut self.session,
                    slot: &self.slot,
                    redactor: &self.redactor,
                },
                later: Vec::new(),
            };
            let ran = crate::check::run(
                std::slice::from_ref(check),
                &site,
                &self.redactor,
                &mut self.log,
                &mut waits,
            )
            .await;
            let later = std::mem::take(&mut waits.later);
            let mut ran = ran.map_err(|e| self.log_error(e))?;
            // The hook's decisions, recorded now that the log is free; nothing they ask for
            // can end the session while it waits for its checks.
            let mut queue = std::collections::VecDeque::new();
            Box::pin(self.carry_out(later, &mut queue, observer)).await?;
            debug_assert!(queue.is_empty(), "{queue:?}");
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
