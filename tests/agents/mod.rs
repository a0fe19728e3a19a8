//! One module per CLI, plus the harness that finds them and runs them in a private sandbox.

pub mod aider;
mod ask;
mod autonomous;
pub mod claude;
pub mod cline;
pub mod codex;
mod containment;
mod eval;
mod gates;
pub mod gemini;
pub mod harness;
mod keys;
mod namer;
mod protocols;
mod readable;
mod resolver;
mod say;
mod server;
mod sessions;
mod starter;
pub mod stdio;
mod turns;
mod two_way;
mod with_oneshot;
