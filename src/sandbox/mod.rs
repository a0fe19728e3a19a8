//! The sandbox every agent runs in: what it sees, reaches and spends (issue 34).

pub mod egress;
pub mod env;
