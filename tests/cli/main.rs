//! The command line as users meet it: errors, ids, pipes, polish, oneshot.toml, the demo, the docs against `--help`, `--json` shapes, `list`/`status`, logs, schemas, the status line, tokens, `ask`, `prune`.
//!
//! One test binary for the area (linking is what CI spends its time on); one module per file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/job_env.rs"]
mod job_env;
#[path = "../common/json_doc.rs"]
mod json_doc;

mod ask_cli;
mod cli_errors;
mod cli_ids;
mod cli_pipes;
mod cli_polish;
mod config_file;
mod demo;
mod docs_cli;
mod foreign_files;
mod json_shapes;
mod list_status;
mod log_human;
mod prune;
mod run_flags;
mod schema_cli;
mod term_status;
mod token_cli;
