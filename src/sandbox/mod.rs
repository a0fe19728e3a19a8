//! The sandbox agents run in: what they can see, reach and spend (issue 34).
pub mod admission;
pub mod limits;
