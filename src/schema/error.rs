//! What goes wrong with a schema, in the crate's voice (see [`crate::error`]): each message
//! reads after "failed to …", names the schema or file, and ends with what to do next.

use std::path::PathBuf;

/// A schema that cannot be found, read or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// No built-in or registry schema has this label.
    #[error(
        "find schema `{label}`: no such label (known: {known}); a file is named by a path \
         with a `/` or ending in .json, and `oneshot schema list` shows the labels"
    )]
    UnknownLabel {
        /// The label asked for.
        label: String,
        /// The labels there are, comma-separated.
        known: String,
    },
    /// A schema file or the registry directory cannot be read.
    #[error("read schema {}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A schema file is not JSON.
    #[error("parse schema {}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// serde_json's message, with the line and column.
        message: String,
    },
    /// The JSON is not a JSON Schema the validator accepts (a bad regex, a `type` that is no
    /// type, …); `oneshot schema check` shows every problem with its pointer.
    #[error("compile schema {name}: {message}; run `oneshot schema check {name}`")]
    Compile {
        /// The label or file.
        name: String,
        /// The validator's message.
        message: String,
    },
}
