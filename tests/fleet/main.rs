//! A fleet over PostgreSQL (a temporary cluster of its own, tests/common/pg_server.rs) and remote sources: runners, restarts, the store, serve.
//!
//! One test binary for the area (linking is what CI spends its time on); one module per file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/fleet.rs"]
mod fleet;
#[path = "../common/job_env.rs"]
mod job_env;
#[path = "../common/pg_server.rs"]
mod pg_server;
#[path = "../common/serve_http.rs"]
mod serve_http;
#[path = "../common/serve_process.rs"]
mod serve_process;

mod fleet_restart;
mod job_remote;
mod job_store_pg;
mod serve_pg;
mod two_machines;
