//! Why an ask gave no answer.

use crate::session::AgentFailure;
use std::time::Duration;

/// Why [`super::ask`] gave no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// The schema does not compile.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaError),
    /// The target could not be started (a missing binary, a command line that does not parse).
    #[error("could not start the target: {0}")]
    Start(String),
    /// The agent reported that its run failed (a refused key, a provider error).
    #[error("{} failed ({}{}): {}{}", .0.agent, .0.kind.as_str(), .0.status.map(|s| format!(" {s}")).unwrap_or_default(), .0.message, if .0.is_auth() { format!("; {}", .0.agent.auth_hint()) } else { String::new() })]
    Agent(AgentFailure),
    /// The target ended without an answer.
    #[error("the target {how} without an answer{}", if .stderr.is_empty() { String::new() } else { format!(": {}", .stderr) })]
    NoAnswer {
        /// How it ended ("exited with code 1").
        how: String,
        /// The end of its stderr.
        stderr: String,
    },
    /// A run took longer than the timeout; it was stopped.
    #[error("the target did not answer within {}", humantime::format_duration(*.0))]
    Timeout(Duration),
    /// The target passed the asking policy's `limits` and was stopped (the words say which
    /// limit, and who reached it).
    #[error("the target was stopped: {0}")]
    Limit(String),
    /// Every run's answer broke the schema.
    #[error("no answer fit the schema in {attempts} run(s); the last one: {problems}")]
    NoFit {
        /// Runs made.
        attempts: u32,
        /// What was wrong with the last answer.
        problems: String,
        /// The last answer, as given.
        answer: String,
    },
    /// A file could not be written.
    #[error("could not {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
}

impl AskError {
    /// Whether the question itself was wrong (schema, target), not its answer: nothing ran.
    pub fn is_usage(&self) -> bool {
        matches!(self, AskError::Schema(_) | AskError::Start(_))
    }
}
