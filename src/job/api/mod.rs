//! The job's front doors: what a CLI command, the dashboard or an embedder calls. Each reads
//! what it needs (the store, the environment, the policy, git), asks the core
//! ([`crate::job::step::Step`]) and carries out what it answers: create, give a verb, land,
//! say, find overlaps, name a branch, replay.

pub mod create;
pub mod give;
pub mod landing;
pub mod naming;
pub mod overlap;
mod policy_judge;
pub mod replay;
pub mod say;
