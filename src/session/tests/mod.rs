//! The decision core under test: every seed path, and a property test over random events and
//! policy answers.

mod agents;
mod caps;
mod no_verdict;
mod paths;
mod props;
mod retake;
pub(crate) mod script;
