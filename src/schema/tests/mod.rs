//! Unit tests of the schema registry: the self-check, validation, extraction, resolving.

mod check;
mod extract;
mod pretty;
mod registry;
mod validate;
