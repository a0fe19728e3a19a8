//! The sandbox around every agent oneshot starts: what it can see, reach and spend (issue 34).

pub mod egress;
pub mod proxy;
