//! The policy's `limits.reserve` before each agent starts: while the machine has less memory
//! available than the reserve, the session waits — said once with the figures, and again when
//! memory frees — so that many sessions (a runner's, or several `oneshot` at once) do not start
//! agents into a machine that is running out. `job run --reserve` keeps a runner from claiming
//! in the same way; this holds for every session, whoever started it.

use super::{Engine, EngineError, Observer};
use crate::process::Role;
use crate::sandbox::admission::{Admission, Reserve};
use crate::session::Event;
use std::time::Duration;

/// How often a waiting session looks at the memory again.
const LOOK_EVERY: Duration = Duration::from_secs(1);

impl Engine {
    /// Waits until the memory available keeps the policy's reserve (at once when it names
    /// none, or the machine does not say); a stop or kill asked meanwhile cuts the wait short
    /// and is returned, as [`Engine::back_off`]'s is.
    pub(super) async fn keep_reserve(
        &mut self,
        role: Role,
        observer: &mut dyn Observer,
    ) -> Result<Option<Event>, EngineError> {
        let mut said = false;
        loop {
            // Read afresh each look: a reloaded policy may change or drop the reserve.
            let Some(reserve) = self.slot.current().limits().reserve else {
                return Ok(None);
            };
            let wait = Reserve(reserve).admits();
            let Admission::Wait { .. } = wait else {
                if said {
                    let m = format!("memory freed: starting the {role}");
                    self.tell_out_of_band(&m, false, observer)?;
                }
                return Ok(None);
            };
            if !said {
                let m = format!(
                    "{wait} (the policy's limits.reserve): the {role} starts when memory frees"
                );
                self.tell_out_of_band(&m, false, observer)?;
                self.durable()?;
                self.report_status(observer);
                said = true;
            }
            if let Some(event) = self.wait_or_interrupt(LOOK_EVERY).await {
                return Ok(Some(event));
            }
        }
    }
}
