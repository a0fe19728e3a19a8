//! Secret redaction, as an embedding program meets it: the [`Redactor`] (built-in patterns, a
//! policy's extra ones, secret values from the environment) and [`Redacted`], the only thing
//! oneshot's stores write — a state file, a job, an audit entry, a commit message — which only a
//! redactor can make.

pub use crate::pipeline::{REDACTED, RedactError, Redacted, Redactor, SealError};
