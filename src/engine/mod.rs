//! The session loop of seed 000 §1.4.
