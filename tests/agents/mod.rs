//! One module per CLI, plus the harness that finds them and runs them in a private sandbox.

mod aider;
mod claude;
mod codex;
mod gemini;
pub mod harness;
