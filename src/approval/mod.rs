//! What a job's approval is decided on, below both the job core and the policy host, which
//! speak it to each other: the result and the job as the `approve(result, job)` hook is shown
//! them (with the job's [`Risk`], its [`JobLimits`] and its panel's [`PanelVerdict`]s), what
//! the hook answers ([`Approval`], which sends HARVESTING to a [`Harvest`]), the built-in rule
//! when it answers nothing, and the core's bound on auto-approval whatever any judge says.
//!
//! Nothing here is public under this module's name: each noun is re-exported where a program
//! finds it — `oneshot::policy` (the hook's types), `oneshot::job` ([`Harvest`]) and
//! `oneshot::job::record` (the job's risk, limits and panel verdicts).

mod harvest;
mod hook;
mod limits;
mod panel;
mod risk;
mod rule;

pub use harvest::Harvest;
pub use hook::{Approval, ApprovalJob, ApprovalResult, ApproveDecision};
pub use limits::JobLimits;
pub use panel::{PanelVerdict, PanelWord};
pub use risk::Risk;
pub use rule::{auto_approvable, default_approve};
