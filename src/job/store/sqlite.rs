//! TEMPORARY stand-in.
#![allow(missing_docs)]
pub struct SqliteStore;
