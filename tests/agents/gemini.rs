//! gemini
