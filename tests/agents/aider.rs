//! aider
