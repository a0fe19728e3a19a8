//! TEMPORARY stand-in.
#![allow(missing_docs)]
#[derive(Debug, thiserror::Error)]
pub enum JobStoreError {
    #[error("fenced {id}")]
    Fenced { id: String, fence: u64 },
    #[error("nf {id}")]
    NotFound { id: String },
}
