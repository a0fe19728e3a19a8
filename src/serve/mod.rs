//! `oneshot serve`: the dashboard for the humans in the loop (issue 24).
pub mod pages;
